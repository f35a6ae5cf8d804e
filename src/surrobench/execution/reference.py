"""Reference outputs of a config for the accuracy guard, on its first input set: fp32 eager with TF32 off, and
fp64 where it runs: a copy of the module (``runner.fresh_module``) in float64/complex128 fed float64 inputs, as
torch._dynamo's accuracy checker builds its own (``cast_to_fp64``, ``torch/_dynamo/debug_utils.py``).
"""

from __future__ import annotations

from dataclasses import replace

import torch

from surrobench.execution.config import ExecConfig, execution_settings
from surrobench.execution.interleave import clone_output
from surrobench.execution.runner import PreparedModel, config_inputs, error_text, fresh_module


def as_fp64(t: torch.Tensor) -> torch.Tensor:
    """``t`` detached in float64 (complex128 for complex), its logical layout kept; another dtype (an index) as is."""
    if t.is_complex():
        return t.detach().to(torch.complex128)
    return t.detach().to(torch.float64) if t.is_floating_point() else t


def reference_outputs(cfg: ExecConfig, prepared: PreparedModel) -> tuple[object, object | None, str | None]:
    """(fp32 eager output, fp64 output or None, why there is no fp64 output or None) on input set 0.

    Raises:
        Exception: whatever the fp32 eager forward raises (the config cannot run at all).
        ModelError: the module cannot be copied (:func:`~surrobench.execution.runner.fresh_module`): no variant of it
            can be timed either, so the caller says so once.
    """
    ref_cfg = replace(cfg, precision="fp32", mode="eager", compile_mode=None, channels_last=False)
    with execution_settings(ref_cfg, prepared.grad_mode):
        inputs = config_inputs(ref_cfg, prepared)[0]
        fp32 = clone_output(prepared.module(*inputs))
        wide = fresh_module(prepared, cfg.device)
        try:
            for p in list(wide.parameters()) + list(wide.buffers()):
                p.data = as_fp64(p.data)
            fp64 = clone_output(wide(*(as_fp64(t) for t in inputs)))
        except Exception as exc:  # any model may refuse float64; the guard then uses rule 1 alone
            return fp32, None, f"no fp64 reference: {error_text(exc)}"
    return fp32, fp64, None
