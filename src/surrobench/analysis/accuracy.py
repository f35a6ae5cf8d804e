"""The accuracy guard: a candidate's output against the fp32 eager reference (TF32 off), and fp64 where the model
runs in it, in torch._dynamo's order (``same()`` in ``torch/_dynamo/utils.py``):

1. **rel L2** ``||y - y_ref|| / ||y_ref||`` per output, per channel of fields (:func:`channel_dim`), at most
   ``tolerance`` (:data:`DEFAULT_TOLERANCE`);
2. **fp64** where 1 fails: RMSE against fp64 at most ``multiplier`` (3 for fp16/bf16 or < 1000 values, else 2)
   times the reference's own plus ``tolerance / 10 x RMS(fp64)`` (relative slack, unlike ``same()``'s absolute
   one: docs/benchmarks/h200-optimize.md).

A NaN or Inf where the reference is finite rejects; the deciding rule is named."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from surrobench.records import schemas
from surrobench.records.findings import rel_l2_against

if TYPE_CHECKING:  # torch is imported by the functions that compare outputs: the CLI reads DEFAULT_TOLERANCE
    import torch  # for its --tolerance default without it (docs/benchmarks/startup.md)

#: Relative L2 error a remedy may add: 1%, the accuracy neural-operator papers report (Li et al., ICLR 2021, Table 1).
DEFAULT_TOLERANCE = 1e-2
#: Multipliers of torch._dynamo.utils.same(): 3 for half-precision results or fewer than 1000 values, else 2.
_HALF_MULTIPLIER, _FP32_MULTIPLIER, _SMALL_NUMEL = 3.0, 2.0, 1000


def output_tensors(output) -> list[torch.Tensor]:
    """The floating-point (or complex) tensors of a model output, depth first, in order: every container
    :func:`surrobench.execution.sanity.output_tensors` walks (dataclasses included)."""
    from surrobench.execution.sanity import output_tensors as walk

    return [t for _, t in walk(output) if t.is_floating_point() or t.is_complex()]


def channel_dim(shape: tuple[int, ...]) -> int | None:
    """The channel dim of a field output: 1 for 4-D or more, the smaller of dims 1 and 2 for 3-D, None below."""
    if len(shape) >= 4:
        return 1
    if len(shape) == 3:
        return 1 if shape[1] <= shape[2] else 2
    return None


def _channel_errors(y: torch.Tensor, ref: torch.Tensor) -> list[float]:
    import torch

    dim = channel_dim(tuple(ref.shape))
    if dim is None or ref.numel() == 0:
        return []
    flat_ref = ref.movedim(dim, 0).reshape(ref.shape[dim], -1)
    flat_diff = (y - ref).movedim(dim, 0).reshape(ref.shape[dim], -1)
    num = torch.linalg.vector_norm(flat_diff, dim=1).tolist()
    den = torch.linalg.vector_norm(flat_ref, dim=1).tolist()
    return [n / d if d > 0 else (0.0 if n == 0 else math.inf) for n, d in zip(num, den)]


@dataclass(frozen=True)
class OutputError(schemas.Plain):
    """Errors of one output: relative L2 of the whole output and per channel, max abs error."""

    rel_l2: float
    rel_l2_channels: tuple[float, ...]
    max_abs: float
    nonfinite: int


@dataclass(frozen=True)
class AccuracyVerdict(schemas.Plain):
    """A verdict: ``ok``, ``decided_by``, ``reason``, worst ``rel_l2``/``max_abs``, ``outputs``, fp64 RMSEs."""

    ok: bool
    decided_by: str
    reason: str
    rel_l2: float | None
    max_abs: float | None
    outputs: tuple[OutputError, ...] = ()
    fp64_rmse: float | None = None
    ref_fp64_rmse: float | None = None


def _compare(y: torch.Tensor, ref: torch.Tensor) -> OutputError:
    import torch

    from surrobench.execution.reference import as_fp64

    y64, r64 = as_fp64(y), as_fp64(ref)
    nonfinite = int((~torch.isfinite(y64) & torch.isfinite(r64)).sum().item())
    diff = (y64 - r64).abs()
    max_abs = float(diff.max().item()) if diff.numel() else 0.0
    num, den = torch.linalg.vector_norm(y64 - r64).item(), torch.linalg.vector_norm(r64).item()
    rel = num / den if den > 0 else (0.0 if num == 0 else math.inf)
    return OutputError(rel, tuple(_channel_errors(y64, r64)), max_abs, nonfinite)


def _rmse(a: torch.Tensor, b: torch.Tensor) -> float:
    from surrobench.execution.reference import as_fp64

    d = (as_fp64(a) - as_fp64(b)).abs()
    return math.sqrt(float((d * d).mean().item())) if d.numel() else 0.0


def check_accuracy(
    candidate, reference, fp64_reference=None, *, tolerance: float = DEFAULT_TOLERANCE
) -> AccuracyVerdict:
    """Judge ``candidate`` against ``reference`` (and ``fp64_reference``) at rel L2 ``tolerance`` (a fraction)."""
    cand, ref = output_tensors(candidate), output_tensors(reference)
    if len(cand) != len(ref) or any(c.shape != r.shape for c, r in zip(cand, ref)):
        return AccuracyVerdict(False, "shape", "outputs differ in number or shape from the fp32 reference", None, None)
    errors = tuple(_compare(c, r) for c, r in zip(cand, ref))
    rel = max((v for e in errors for v in (e.rel_l2, *e.rel_l2_channels)), default=0.0)  # whole outputs, channels
    max_abs = max((e.max_abs for e in errors), default=0.0)
    if bad := sum(e.nonfinite for e in errors):
        reason = f"{bad} output value(s) are NaN or Inf where the fp32 reference is finite"
        return AccuracyVerdict(False, "nonfinite", reason, rel, max_abs, errors)
    verdict = dict(rel_l2=rel, max_abs=max_abs, outputs=errors)
    if rel <= tolerance:
        return AccuracyVerdict(True, "rel_l2", rel_l2_against(rel, tolerance, "<= tolerance"), **verdict)
    exact = output_tensors(fp64_reference) if fp64_reference is not None else []
    if len(exact) == len(ref):  # dynamo's fp64 rule over all outputs: each candidate's and reference's worst RMSE
        import torch

        passes, res_err, ref_err = True, 0.0, 0.0
        for y, r, e in zip(cand, ref, exact):
            y_err, r_err = _rmse(e, y), _rmse(e, r)
            half = y.dtype in (torch.float16, torch.bfloat16)
            multiplier = _HALF_MULTIPLIER if half or e.numel() < _SMALL_NUMEL else _FP32_MULTIPLIER
            passes &= y_err <= multiplier * r_err + tolerance / 10 * _rmse(e, torch.zeros_like(e))
            res_err, ref_err = max(res_err, y_err), max(ref_err, r_err)
        verdict.update(fp64_rmse=res_err, ref_fp64_rmse=ref_err)
        if passes:
            reason = f"{rel_l2_against(rel, tolerance)}, but RMSE vs fp64 {res_err:.1e} is within torch._dynamo's"
            return AccuracyVerdict(True, "fp64", f"{reason} bound of the fp32 reference's own {ref_err:.1e}", **verdict)
        reason = f"{rel_l2_against(rel, tolerance, '> tolerance')}; RMSE vs fp64 {res_err:.1e} exceeds torch._dynamo's"
        return AccuracyVerdict(False, "rel_l2", f"{reason} bound (fp32's own {ref_err:.1e})", **verdict)
    return AccuracyVerdict(False, "rel_l2", rel_l2_against(rel, tolerance, "> tolerance"), **verdict)
