"""Feasibility rules: each infeasible remedy gets its reason before any time is spent."""

from __future__ import annotations

from collections import Counter

from conftest import exec_config

from surrobench.analysis.feasibility import infeasible_reason
from surrobench.collect.probe import FftCall, ProbeFacts
from surrobench.execution.config import ExecConfig
from surrobench.execution.remedies import candidate_remedies


def _cfg(device="cpu", **kw) -> ExecConfig:
    return exec_config(**{"model": "m", "device": device, "iters": 1, **kw})


def _remedy(name, device="cuda"):
    return next(r for r in candidate_remedies(device) if r.name == name)


def _reason(name, cfg=None, probe=None, ranks=(4,), **kw):
    cfg = cfg or _cfg("cuda")
    return infeasible_reason(_remedy(name, cfg.device), cfg, probe or ProbeFacts(), input_ranks=ranks, **kw)


def test_cuda_remedies_on_the_cpu_say_so():
    for name in ("cudagraph", "tf32", "fp16", "cudnn_benchmark", "compile-reduce-overhead"):
        assert _reason(name, _cfg("cpu")).startswith("needs CUDA")
    assert "default torch.compile" in _reason("compile-reduce-overhead", _cfg("cpu"))
    assert _reason("bf16", _cfg("cpu")) is None


def test_channels_last_needs_a_4d_input():
    reason = _reason("channels_last", ranks=(3, 2))
    assert "4-D" in reason and "3-D, 2-D" in reason  # the rank it needs, the model's input ranks
    assert _reason("channels_last", ranks=(4,)) is None


def test_cudnn_autotuning_needs_a_convolution():
    assert "no convolution" in _reason("cudnn_benchmark", probe=ProbeFacts())
    assert _reason("cudnn_benchmark", probe=ProbeFacts(convolutions=4)) is None


def test_cuda_graph_refused_when_forward_syncs_or_shapes_change():
    syncing = ProbeFacts(syncs=Counter({"item": 2}))
    assert "(item x2)" in _reason("cudagraph", probe=syncing)  # the probe's sync, counted
    assert "change shape" in _reason("cudagraph", shapes_change=True)
    assert _reason("cudagraph") is None


def test_half_precision_ffts():
    bf16 = ProbeFacts(ffts=[FftCall("fft_rfft2", "bfloat16", (64, 64))])
    assert "cuFFT" in _reason("bf16", half_probe=bf16) and "no bf16" in _reason("bf16", half_probe=bf16)
    assert "PocketFFT" in _reason("bf16", _cfg("cpu"), half_probe=bf16)
    odd = ProbeFacts(ffts=[FftCall("fft_rfft2", "float16", (64, 64)), FftCall("fft_irfft2", "float16", (96, 64))])
    reason = _reason("fp16", half_probe=odd)
    assert "power-of-2" in reason and "fft_irfft2" in reason and "96x64" in reason  # the rule, the call, its size
    pow2 = ProbeFacts(ffts=[FftCall("fft_rfft2", "float16", (64, 64))])
    assert _reason("fp16", half_probe=pow2) is None
    cast_back = ProbeFacts(ffts=[FftCall("fft_rfft2", "float32", (96, 64))])  # the model keeps its FFTs in fp32
    assert _reason("fp16", half_probe=cast_back) is None


def test_a_remedy_the_baseline_already_has():
    assert _reason("tf32", _cfg("cuda", precision="tf32")) == "already part of the baseline config"


def test_a_thread_count_equal_to_torch_default_is_the_baseline_itself(monkeypatch):
    import torch

    from surrobench.execution.remedies import Remedy

    def threads(n):
        return Remedy(f"threads={n}", (("threads", n),), ("cpu",), "", ())

    monkeypatch.setattr(torch, "get_num_threads", lambda: 4)
    reason = infeasible_reason(threads(4), _cfg(), ProbeFacts(), input_ranks=(4,))
    assert reason == "torch's default here is 4 threads: the baseline already runs 4"
    assert infeasible_reason(threads(1), _cfg(), ProbeFacts(), input_ranks=(4,)) is None
    # a baseline that sets its own count (--threads 2) is not on the default: 4 is a change
    assert infeasible_reason(threads(4), _cfg(threads=2), ProbeFacts(), input_ranks=(4,)) is None


def test_an_inapplicable_remedy_is_neither_advised_nor_cited_unmeasured():
    """A Perceiver (3-D inputs) whose copies of 4-D attention tensors name channels_last: the one rule that makes
    optimize call it infeasible takes the clause out of diagnose's action (so it is never measured nor counted),
    and a stored ``infeasible`` verdict is cited as such, not as "unmeasured"."""
    from dataclasses import replace

    from synthetic import config, latency_samples, optimize_entry

    from surrobench.api.diagnose import applicable_actions
    from surrobench.records.config import InputSpec
    from surrobench.records.findings import Clause, Finding
    from surrobench.results.measured_remedies import attach_measured

    nhwc = Clause("channels_last memory for the 4-D tensors permuted and copied", ("channels_last",))
    fuse = Clause("fuse: torch.compile", ("compile",))
    result = config(latency_samples(3.0, 0.01))
    three_d = replace(result, inputs=(InputSpec((1, 2048, 3), "float32"), InputSpec((1, 2048, 2), "float32")))
    finding = Finding("fragmented_ops", "high", "s", (), (fuse, nhwc), None, three_d.label())
    (kept,) = applicable_actions([finding], [three_d])
    assert kept.remedies == ("compile",) and len(kept.clauses) == 1
    four_d = replace(result, inputs=(InputSpec((1, 3, 64, 64), "float32"),))
    assert applicable_actions([replace(finding, config=four_d.label())], [four_d])[0].clauses == (fuse, nhwc)
    reason = "channels_last applies to 4-D (B, C, H, W) inputs; this model's inputs are 3-D"
    entry = optimize_entry({"candidates": [{"name": "channels_last", "verdict": "infeasible", "reason": reason}]})
    (cited,) = attach_measured([replace(finding, action=(nhwc,))], {}, {finding.config: entry})[0].clauses
    assert cited.text.endswith(f": not advised (channels_last: not applicable ({reason}))") and cited.remedies == ()
