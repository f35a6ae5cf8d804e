"""One forward observed op by op (TorchDispatchMode): FFTs, host syncs, complex tensors; no profiling."""

from __future__ import annotations

import re

from collections import Counter
from dataclasses import dataclass, field

import torch
from torch.utils._python_dispatch import TorchDispatchMode

#: Calls whose result the host must read (CUDA graph capture forbids them: PyTorch "CUDA Graphs"; some data-shaped).
SYNC_OPS = frozenset(
    {"item", "_local_scalar_dense", "nonzero", "nonzero_numpy", "masked_select", "unique", "_unique2"}
    | {"unique_consecutive", "unique_dim", "is_nonzero", "equal", "allclose"}
)
_COPY_OPS = frozenset({"to", "_to_copy", "copy_", "cpu"})
#: FFT ops whose real output is produced (sizes read on the output); the others' sizes are read on the input.
_REAL_OUTPUT_FFT = ("fft_irfft", "fft_hfft", "_fft_c2r")
HALF_DTYPES = (torch.float16, torch.bfloat16)


class ProbeStop(Exception):
    """Raised by a probe told to stop at the first FFT in half precision (the call would fail on CUDA)."""


@dataclass(frozen=True)
class FftCall:
    """One FFT call: op name, the dtype it received and the signal sizes along its transformed dims."""

    op: str
    dtype: str
    sizes: tuple[int, ...]

    @property
    def power_of_two(self) -> bool:
        """Every signal size a power of two (what half-precision cuFFT accepts)."""
        return all(n > 0 and n & (n - 1) == 0 for n in self.sizes)


@dataclass
class ProbeFacts:
    """One observed forward: ``syncs`` by op name, ``convolutions`` calls, FFTs, complex tensors."""

    ffts: list[FftCall] = field(default_factory=list)
    syncs: Counter = field(default_factory=Counter)
    complex_ops: int = 0
    ops: int = 0
    convolutions: int = 0

    def sync_text(self) -> str:
        """``"item x2, nonzero x1"``; empty when the forward never waits."""
        return ", ".join(f"{name} x{n}" for name, n in self.syncs.most_common())

    def fft_text(self) -> str:
        """The distinct FFT signal sizes, ``"64x64, 64x33"``."""
        return ", ".join(dict.fromkeys("x".join(map(str, c.sizes)) for c in self.ffts))


def _dims(func, args, kwargs, ndim: int) -> list[int]:
    names = [a.name for a in func._schema.arguments]
    dim = kwargs.get("dim", args[names.index("dim")] if "dim" in names and names.index("dim") < len(args) else None)
    if dim is None:
        name = func.overloadpacket.__name__
        count = 2 if name.endswith("2") else ndim if name.endswith("n") else 1
        dim = list(range(ndim - count, ndim))
    dims = [dim] if isinstance(dim, int) else list(dim)
    return [d % ndim for d in dims]


def _is_complex(x) -> bool:
    return isinstance(x, torch.Tensor) and x.is_complex()


#: aten's convolution ops, their backends and the composites inference mode dispatches undecomposed.
_CONVOLUTION = re.compile(r"convolution|conv\d|conv_transpose\d|conv_tbc")


class _Recorder(TorchDispatchMode):
    def __init__(self, facts: ProbeFacts, stop_at_half_fft: bool) -> None:
        super().__init__()
        self.facts, self.stop = facts, stop_at_half_fft

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        self.facts.ops += 1
        if _CONVOLUTION.search(name):
            self.facts.convolutions += 1
        first = args[0] if args and isinstance(args[0], torch.Tensor) else None
        if name in SYNC_OPS:
            self.facts.syncs[name] += 1
        elif name == "index" and any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in args[1]):
            self.facts.syncs["boolean-mask indexing"] += 1
        if "fft" in name and first is not None and self.stop and first.dtype in HALF_DTYPES:
            self._record_fft(func, name, args, kwargs, first, None)
            raise ProbeStop(name)
        out = func(*args, **kwargs)
        if name in _COPY_OPS and first is not None and first.device.type != "cpu":
            if isinstance(out, torch.Tensor) and out.device.type == "cpu":
                self.facts.syncs[f"{name} to cpu"] += 1
        if "fft" in name and first is not None:
            self._record_fft(func, name, args, kwargs, first, out)
        if _is_complex(first) or _is_complex(out):
            self.facts.complex_ops += 1
        return out

    def _record_fft(self, func, name, args, kwargs, first, out) -> None:
        shaped = out if name.startswith(_REAL_OUTPUT_FFT) and isinstance(out, torch.Tensor) else first
        dims = _dims(func, args, kwargs, shaped.dim())
        self.facts.ffts.append(
            FftCall(name, str(first.dtype).removeprefix("torch."), tuple(shaped.shape[d] for d in dims))
        )


def probe_call(fn, *, stop_at_half_fft: bool = False) -> tuple[ProbeFacts, BaseException | None]:
    """Run ``fn()`` once observed: the facts and its exception; ``stop_at_half_fft``: stop at a half FFT."""
    facts = ProbeFacts()
    try:
        with _Recorder(facts, stop_at_half_fft):
            fn()
    except ProbeStop:
        return facts, None
    except Exception as exc:  # the model's own failure: the caller reports it as the candidate's cause
        return facts, exc
    return facts, None
