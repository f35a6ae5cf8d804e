"""The vocabularies of a config: precisions, execution modes, devices and result statuses; and the remedies.

Each word is defined once here; parsers, runners and reports read these tuples.
"""

from __future__ import annotations

#: ``fp32`` (TF32 off), ``tf32`` (TF32 on), ``fp16`` / ``bf16`` (autocast); one per config.
PRECISIONS = ("fp32", "tf32", "fp16", "bf16")
#: The half precisions (autocast to a 16-bit float type); also the ids of their remedies (:data:`REMEDIES`).
HALF_PRECISIONS = ("fp16", "bf16")
#: ``eager``, ``compile`` (torch.compile), ``cudagraph`` (capture + replay, CUDA only).
MODES = ("eager", "compile", "cudagraph")
#: ``torch.compile(mode=...)`` values (PyTorch docs, ``torch.compile``); None in a config is the default.
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
#: Where a config runs; ``auto`` (CUDA when torch sees a GPU) is resolved before a config is made.
DEVICES = ("cpu", "cuda")
#: How a config ended: measured, out of memory, another exception, over its time limit (``--timeout-s``; what was
#: measured before it is kept), measured with an output holding NaN/Inf on some input set and call (its timings
#: kept, the tensor and the call in ``extra["nonfinite"]``: :mod:`surrobench.execution.sanity`), or cut by Ctrl-C or
#: a signal (what was measured kept, as a timeout keeps it). Every status but ``ok`` is a failed config (exit 3,
#: never compared, never optimized). Run documents before run-v4 and databases before it hold a non-finite output
#: as ``error``.
STATUSES = ("ok", "oom", "error", "timeout", "nonfinite", "interrupted")
#: An optimize candidate's verdict: faster by the rule and accurate; slower by the rule; neither (inside the noise,
#: or its interval too wide to tell: optimize-v3); outside the tolerance; not tried for a stated reason; tried and
#: raised. The rule: :mod:`surrobench.records.paired` (docs/design.md, "Faster: one rule for a pair").
OPTIMIZE_VERDICTS = ("accepted", "rejected_slower", "rejected_not_faster", "rejected_accuracy", "infeasible", "failed")
#: The verdicts of optimize-v1 and v2 documents: ``rejected_slower`` there meant "not faster", slower or not.
OPTIMIZE_VERDICTS_V2 = ("accepted", "rejected_slower", "rejected_accuracy", "infeasible", "failed")
#: The verdicts of a recipe measured again in fresh processes (:mod:`surrobench.results.optimize` says what each means).
FRESH_VERDICTS = ("reproduced", "overlaps", "not_reproduced", "failed", "interrupted")
#: The remedies ``surrobench optimize`` tries (:mod:`surrobench.execution.remedies` builds each candidate; a remedy
#: with a value makes one candidate per value, ``threads=1``, ``threads=4``) and a finding's action may suggest
#: (:attr:`surrobench.records.findings.Clause.remedies`), by id.
REMEDIES = (
    "cudagraph",
    "tf32",
    "fp16",
    "bf16",
    "fp32",
    "channels_last",
    "cudnn_benchmark",
    "threads",
    "compile",
    "compile-reduce-overhead",
    "compile-max-autotune-no-cudagraphs",
)

#: The remedies that change only which kernels run, not how many the host launches nor its work per launch (a
#: CUDA graph and torch.compile cut both; threads are the CPU's): their gain is bounded by the host's submission
#: time (:mod:`surrobench.analysis.diagnose`).
KERNEL_SIDE_REMEDIES = ("tf32", "fp16", "bf16", "channels_last", "cudnn_benchmark")


def remedy_id(candidate: str) -> str:
    """The :data:`REMEDIES` id of a single remedy's candidate name: the name, up to its ``=`` for a remedy with a
    value (``threads=4`` -> ``threads``)."""
    return candidate.split("=", 1)[0]
