"""Why a config failed, in one line: :data:`FAILURE_CAUSES` maps what PyTorch and the CUDA libraries say to a
cause id and one line a user can act on, stored next to the original error.

Sources of the messages and of the rules they carry:

- cuFFT computes no bfloat16 transform, and half precision only on power-of-2 sizes (cuFFT documentation,
  "Half-precision cuFFT Transforms": "sizes ... must be powers of two"; PyTorch raises ``Unsupported dtype
  BFloat16`` and ``cuFFT only supports dimensions whose sizes are powers of two when computing in half
  precision``). The CPU's FFT (PocketFFT) has neither: ``Unsupported dtype Half`` / ``BFloat16``.
- CUDA graph capture fails when the captured work synchronizes the host (``.item()``, ``.cpu()``, a
  data-dependent shape such as ``nonzero``): CUDA returns ``cudaErrorStreamCaptureUnsupported`` ("operation
  not permitted when stream is capturing") and then ``cudaErrorStreamCaptureInvalidated`` ("operation failed
  due to a previous error during capture"); PyTorch docs, "CUDA Graphs", constraints.
- A failed allocation is ``torch.OutOfMemoryError`` on CUDA, but a ``RuntimeError`` from c10's CPU allocator
  (``c10/core/impl/alloc_cpu.cpp``: "DefaultCPUAllocator: can't allocate memory", or "not enough memory" on
  some builds): both are the ``oom`` status (:func:`failure_status`).
- TorchInductor generates no code for complex tensors (it warns "Torchinductor does not support code
  generation for complex operators"), and TorchDynamo raises ``NotImplementedError`` (wrapped as
  ``InternalTorchDynamoError``) or ``Unsupported`` on code it cannot trace.
- An op without a kernel for a dtype: ATen's dispatch macros raise ``"addmm_impl_cpu_" not implemented for 'Half'``
  (``AT_DISPATCH_*``, naming the kernel); ``torch.complex`` raises ``Expected both inputs to be Half, Float or Double
  tensors but got BFloat16 and BFloat16`` (aten/src/ATen/native/TensorFactories.cpp), naming none.
- ``torch.autograd.grad`` of an output built under ``torch.no_grad`` raises ``element 0 of tensors does not require
  grad and does not have a grad_fn`` (torch/csrc/autograd/python_engine.cpp); ``torch.enable_grad()`` records the graph.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from surrobench.errors import ModelError

#: ``(cause_id, pattern, one line)``: first match wins; the pattern is searched (case-insensitively) in
#: the :func:`failure_label` (``"Type: message"``) of the exception and of each exception it was raised from.
FAILURE_CAUSES: tuple[tuple[str, str, str], ...] = (
    (
        "fft_no_bf16",
        r"unsupported dtype bfloat16",
        "the FFT library has no bf16 transform (cuFFT, PocketFFT): keep the FFTs in fp32 (cast around them), or use "
        "fp16 at power-of-2 sizes",
    ),
    (
        "fft_half_size",
        r"powers of two when computing in half precision",
        "half-precision FFTs need power-of-2 sizes (cuFFT): pad the grid to a power of 2, or keep the FFTs in fp32",
    ),
    (
        "fft_no_half",
        r"unsupported dtype half",
        "the FFT library has no fp16 transform on this device (the CPU's PocketFFT): keep the FFTs in fp32",
    ),
    (
        "unsupported_dtype",
        r"(?:\"(?P<op>[^\"]+)\" not implemented for '|(?P<op2>[\w.]+): low precision dtypes not supported\. got "
        r"|expected both inputs to be half, float or double tensors but got )(?P<dtype>bfloat16|half|complexhalf)",
        "an op{op} has no {dtype} kernel on this device: the precision is unsupported here; keep that op in fp32 "
        "(cast around it), or use another precision",
    ),
    (
        "out_of_memory",
        r"out of memory|outofmemoryerror|defaultcpuallocator: (can't allocate memory|not enough memory)",
        "the config does not fit in device memory: a smaller batch or grid, lower precision, or chunked inference",
    ),
    (
        "graph_capture_sync",
        r"not permitted when stream is capturing|previous error during capture|streamcapture|stream capture",
        "CUDA graph capture hit a host synchronization (.item(), .cpu(), a data-dependent shape such as nonzero or a "
        "node count inferred from edge_index): remove it from forward, or run eager/compile",
    ),
    (
        "nonfinite_output",
        r"output is not finite",
        "the model returned NaN/Inf: check its weights and inputs; in fp16, activations past 65504 overflow (use bf16 or fp32)",
    ),
    (
        "grad_under_no_grad",
        r"does not require grad and does not have a grad_fn",
        "the forward takes gradients, and ran under torch.no_grad as a benchmark does: wrap them in torch.enable_grad()",
    ),
    (
        "inductor_complex",
        r"complex",
        "TorchInductor generates no code for complex tensors: compile only the real-valued parts "
        "(torch.compiler.disable around the spectral layers), or run it eager{cuda_graph}",
    ),
    (
        "dynamo_unsupported",
        r"dynamo|inductor|backendcompilerfailed",
        "torch.compile could not trace or compile the model (TorchDynamo/Inductor): run it eager{cuda_graph}, "
        "or compile a submodule that traces",
    ),
)
UNKNOWN = "unknown"
#: The cause of a build the budget's end cut, told by the search that cut it (:func:`budget_cut`), not read from text.
BUDGET_END = "budget_end"
_COMPILED = tuple((cause, re.compile(pattern, re.IGNORECASE), line) for cause, pattern, line in FAILURE_CAUSES)
#: Causes whose pattern is too broad alone: they only count when the text comes from torch.compile.
_COMPILE_ONLY = frozenset({"inductor_complex"})
_COMPILE_CONTEXT = re.compile(r"dynamo|inductor|torch\.compile|backendcompilerfailed|lowering", re.IGNORECASE)


class FailureCause(NamedTuple):
    """A failure explained: ``cause_id`` from :data:`FAILURE_CAUSES` (or ``"unknown"``) and one line for the user."""

    cause_id: str
    line: str


def budget_cut(after_s: float) -> FailureCause:
    """The failure of a build the budget's end cut ``after_s`` seconds after it started (:data:`BUDGET_END`)."""
    return FailureCause(BUDGET_END, f"ran out of the budget: cut at its end, {after_s:.3g} s after it started")


def failure_label(exc: BaseException, message: str | None = None) -> str:
    """How a failure is shown and stored: ``"Type: message"`` (``message`` in place of ``str(exc)`` when given); a
    :class:`~surrobench.errors.ModelError` its message alone (which names the model and the type raised)."""
    text = str(exc) if message is None else message
    return text if isinstance(exc, ModelError) else f"{type(exc).__name__}: {text}"


def _texts(failure: BaseException | str) -> list[str]:
    """The :func:`failure_label` of ``failure`` and of its ``__cause__``/``__context__`` chain (a string as is)."""
    if isinstance(failure, str):
        return [failure]
    texts, seen, exc = [], set(), failure
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        texts.append(failure_label(exc))
        exc = exc.__cause__ or exc.__context__
    return texts


def explain_failure(failure: BaseException | str | None, device: str | None = None) -> FailureCause:
    """The known cause of ``failure`` (an exception or its recorded ``"Type: message"`` text) and one line saying
    what to do, a CUDA graph among the remedies unless ``device`` is ``cpu``; ``("unknown", the error's first
    line)`` when no pattern matches (``""`` for None)."""
    if failure is None:
        return FailureCause(UNKNOWN, "")
    texts = _texts(failure)
    joined = "\n".join(texts)
    in_compile = bool(_COMPILE_CONTEXT.search(joined))
    for cause, pattern, line in _COMPILED:
        if (found := pattern.search(joined)) and (cause not in _COMPILE_ONLY or in_compile):
            named = found.groupdict()  # a dtype error's op (``op`` or ``op2``, where it names one) and dtype
            op, graph = named.get("op") or named.get("op2"), "" if device == "cpu" else " or as a CUDA graph"
            return FailureCause(cause, line.format_map(named | {"op": f" ({op})" if op else "", "cuda_graph": graph}))
    return FailureCause(UNKNOWN, next((line.strip() for line in texts[0].splitlines() if line.strip()), ""))


def failure_status(exc: BaseException) -> str:
    """``oom`` when ``exc`` (or one it was raised from) is an allocation failure, else ``error``."""
    return "oom" if explain_failure(exc).cause_id == "out_of_memory" else "error"


def failure_extra(failure: BaseException | str | None, device: str | None = None) -> dict:
    """The explanation (:func:`explain_failure`) as a failed config's ``extra`` stores it."""
    cause = explain_failure(failure, device)
    return {"failure_cause": cause.cause_id, "failure_explained": cause.line}


def recorded_cause(error: str | None, extra: dict) -> FailureCause:
    """The cause of a recorded failure: as stored in ``extra``, else explained from the ``error`` text (older runs)."""
    if extra.get("failure_cause"):
        return FailureCause(extra["failure_cause"], extra.get("failure_explained", ""))
    return explain_failure(error)
