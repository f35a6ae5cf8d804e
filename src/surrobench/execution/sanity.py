"""Two ways a forward can make its own measurement wrong, watched outside the timed region of every config.

- **Memory that grows across calls** (a forward that keeps a reference to each output, a cache with no bound):
  its latency drifts with the allocator's state and a long run ends in OOM. :class:`MemoryWatch` reads the
  memory in use before each timed call and after the last: CUDA ``torch.cuda.memory_allocated`` (live tensors,
  PyTorch docs "CUDA semantics", memory management), the process's resident set (``psutil``) on the CPU.
  The per-call growth is the *median* of the increments, so a one-off step (the allocator taking a new arena, a
  lazily built buffer) does not read as a leak; a leak grows on every call.
- **A forward that changes its input** (an in-place op on an argument): each call then sees other data than the
  fixed-seed set, and the set rotation (:mod:`surrobench.workload.inputs`) no longer feeds what it says.
  :func:`input_digest` hashes the first input set before the cold call and again after the warm-up.

Both land in the result's ``extra`` as structured fields (:data:`LEAK_KEY`, :data:`MUTATED_KEY`), named in the
sweep's warnings; the rounds of one config (``run --rounds``) keep what any round saw (:func:`merge_flags`).
"""

from __future__ import annotations

import hashlib
import statistics

import psutil
import torch

#: ``extra`` key of a config whose memory grew on most calls: ``{"bytes_per_call", "growth_bytes", "calls"}``
#: (merged rounds add ``"rounds"``, how many of them grew: :func:`merge_flags`).
LEAK_KEY = "memory_growth"
#: ``extra`` key of a config whose forward changed its input: the indices of the changed tensors in call order.
MUTATED_KEY = "mutated_inputs"
#: Median growth per call that counts as a leak, bytes. 1 MiB is above what reading the resident set moves by
#: without a leak (the 4 KiB pages of a few small Python objects), far under the 16 MiB per call of the leak
#: that went unnoticed (issue report, fresh-user trial); on CUDA any steady growth of live tensors is a leak,
#: and the same bound keeps a small cache that grows now and then out of the warnings.
LEAK_MIN_BYTES_PER_CALL = 2**20
#: Bytes hashed per slice: a device tensor is copied to the host one slice at a time, so the check holds at most
#: this much host memory whatever the input's size.
_DIGEST_SLICE_BYTES = 8 * 2**20


def memory_in_use(device: str) -> int:
    """Memory held now, bytes: live CUDA tensors on ``cuda``, the process's resident set on the CPU."""
    if device == "cuda":
        return torch.cuda.memory_allocated()
    return psutil.Process().memory_info().rss


class MemoryWatch:
    """Reads :func:`memory_in_use` before each timed call (:meth:`sample`, a ``time_loop`` ``before_each``
    hook) and after the last (:meth:`growth`)."""

    def __init__(self, device: str) -> None:
        self.device = device
        self.readings: list[int] = []

    def sample(self) -> None:
        self.readings.append(memory_in_use(self.device))

    def growth(self) -> dict | None:
        """``{"bytes_per_call", "growth_bytes", "calls"}`` when the median increment per call is at least
        :data:`LEAK_MIN_BYTES_PER_CALL`, else None (also with fewer than two calls watched)."""
        self.sample()
        steps = [b - a for a, b in zip(self.readings, self.readings[1:])]
        if len(steps) < 2:
            return None
        per_call = statistics.median(steps)
        if per_call < LEAK_MIN_BYTES_PER_CALL:
            return None
        total = self.readings[-1] - self.readings[0]
        return {"bytes_per_call": int(per_call), "growth_bytes": int(total), "calls": len(steps)}


def merge_flags(extras: list[dict]) -> dict:
    """The forward flags of the rounds of one config (their results' ``extra``, in round order) as one: the
    memory growth of the round that grew most per call, with ``"rounds"``, how many rounds grew; the changed
    inputs of every round, sorted. A flag seen in one round only is kept: a leak or a mutation may show
    once the allocator or the input sets are in another state. Empty when no round was flagged."""
    growths = [e[LEAK_KEY] for e in extras if e.get(LEAK_KEY)]
    mutated = sorted({i for e in extras for i in e.get(MUTATED_KEY, ())})
    flags = {}
    if growths:
        flags[LEAK_KEY] = {**max(growths, key=lambda g: g["bytes_per_call"]), "rounds": len(growths)}
    if mutated:
        flags[MUTATED_KEY] = mutated
    return flags


def _tensor_digest(t: torch.Tensor) -> str:
    """blake2b of the tensor's bytes in memory order (a channels-last tensor as it is laid out)."""
    order = sorted(range(t.dim()), key=lambda d: -t.stride(d))
    flat = t.detach().permute(order) if t.dim() else t.detach()
    flat = flat.contiguous().reshape(-1).view(torch.uint8)
    digest = hashlib.blake2b(str((t.dtype, tuple(t.shape))).encode())
    for start in range(0, flat.numel(), _DIGEST_SLICE_BYTES):
        digest.update(flat[start : start + _DIGEST_SLICE_BYTES].cpu().numpy().tobytes())
    return digest.hexdigest()


def input_digest(inputs: tuple) -> tuple[str | None, ...]:
    """One digest per argument of an input set (None for one that is not a tensor), for :func:`mutated_inputs`."""
    return tuple(_tensor_digest(t) if isinstance(t, torch.Tensor) else None for t in inputs)


def mutated_inputs(before: tuple[str | None, ...], after: tuple[str | None, ...]) -> list[int]:
    """Indices of the arguments whose digest changed between two :func:`input_digest` readings."""
    return [i for i, (a, b) in enumerate(zip(before, after)) if a != b]
