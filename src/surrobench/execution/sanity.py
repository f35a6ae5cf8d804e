"""Three ways a forward can make its own measurement wrong, watched outside the timed region, each a field of
the result's ``extra`` (rounds merged by :func:`merge_flags`):

- memory that grows across calls (:data:`LEAK_KEY`, :class:`MemoryWatch`): the *median* growth per call, so a
  one-off step does not read as a leak;
- a forward that changes its input (:data:`MUTATED_KEY`): :func:`input_digest` before the cold call and after
  the warm-up;
- an output that is not finite (:data:`NONFINITE_KEY`, status ``nonfinite``): :func:`check_calls` on the first
  calls and after the timed calls.
"""

from __future__ import annotations

import dataclasses
import hashlib
import statistics
from collections.abc import Callable, Iterable, Iterator

import psutil
import torch

from surrobench.records.run import LEAK_KEY, MUTATED_KEY

#: Median growth per call that counts as a leak, bytes: above the few 4 KiB pages the resident set moves by without
#: one, far under the 16 MiB per call of a leak seen in a fresh-user trial.
LEAK_MIN_BYTES_PER_CALL = 2**20
#: Bytes hashed per slice copied to the host: the most host memory the check holds.
_DIGEST_SLICE_BYTES = 8 * 2**20


def memory_in_use(device: str) -> int:
    """Memory held now, bytes: live CUDA tensors on ``cuda``, the process's resident set on the CPU."""
    return torch.cuda.memory_allocated() if device == "cuda" else psutil.Process().memory_info().rss


class MemoryWatch:
    """Reads :func:`memory_in_use` between calls of one config, each reading closing an interval (``run`` and
    ``optimize``: each timed call, :meth:`pause` between optimize's rounds; ``serve``: each load point)."""

    def __init__(self, device: str) -> None:
        self.device = device
        self.per_call_bytes: list[float] = []  # each interval's growth over its calls
        self.grown_bytes = 0
        self.calls = 0
        self._last: int | None = None

    def sample(self, calls: int = 1) -> None:
        """Read the memory in use now; ``calls``: this config's calls since the previous reading."""
        now = memory_in_use(self.device)
        if self._last is not None and calls > 0:
            self.per_call_bytes.append((now - self._last) / calls)
            self.grown_bytes += now - self._last
            self.calls += calls
        self._last = now

    def pause(self) -> None:
        """Other work runs until the next :meth:`sample`, which opens a new interval instead of closing one."""
        self._last = None

    def growth(self) -> dict | None:
        """``{"bytes_per_call", "growth_bytes", "calls"}`` when the median interval grew by at least
        :data:`LEAK_MIN_BYTES_PER_CALL` per call, else None (also with fewer than two intervals)."""
        if len(self.per_call_bytes) < 2:
            return None
        per_call = statistics.median(self.per_call_bytes)
        if per_call < LEAK_MIN_BYTES_PER_CALL:
            return None
        return {"bytes_per_call": int(per_call), "growth_bytes": int(self.grown_bytes), "calls": self.calls}


def merge_flags(extras: list[dict]) -> dict:
    """The forward flags of one config's rounds (``extra``s, in order) as one: the growth of the round that grew
    most per call with ``"rounds"`` that grew, the changed inputs of every round; a flag of one round is kept."""
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


def output_tensors(output, path: str = "output") -> Iterator[tuple[str, torch.Tensor]]:
    """Every tensor of a model output with its path (``output[1]``, ``output['u']``, ``output.u``), nested."""
    if isinstance(output, torch.Tensor):
        yield path, output
    elif isinstance(output, dict):
        for key, value in output.items():
            yield from output_tensors(value, f"{path}[{key!r}]")
    elif isinstance(output, (list, tuple)):
        for i, value in enumerate(output):
            yield from output_tensors(value, f"{path}[{i}]")
    elif dataclasses.is_dataclass(output) and not isinstance(output, type):
        for f in dataclasses.fields(output):
            yield from output_tensors(getattr(output, f.name), f"{path}.{f.name}")


def nonfinite_tensor(output) -> dict | None:
    """``{"tensor", "nonfinite_values", "numel"}`` of the first floating or complex tensor of ``output`` that holds
    NaN or Inf, else None (a synchronization on a device)."""
    for path, t in output_tensors(output):
        if not (t.is_floating_point() or t.is_complex()):
            continue
        bad = int((~torch.isfinite(t)).sum().item())
        if bad:
            return {"tensor": path, "nonfinite_values": bad, "numel": t.numel()}
    return None


def check_calls(step: Callable[[int], object], sets: Iterable[int], first_call: int, phase: str) -> dict | None:
    """Call ``step(i)`` once per input set of ``sets``, untimed, up to the first output that is not finite
    (:func:`nonfinite_tensor`): its :data:`NONFINITE_KEY` record, else None. ``first_call``: the config's calls
    before these; ``phase``: ``"first"`` or ``"end"``."""
    for k, i in enumerate(sets):
        found = nonfinite_tensor(step(i))
        if found:
            return {**found, "input_set": i, "call": first_call + k, "phase": phase}
    return None


def nonfinite_message(found: dict) -> str:
    """One line for a :func:`check_calls` record; it keeps the words ``output is not finite``, which
    :func:`surrobench.execution.failures.explain_failure` reads."""
    return (
        f"model output is not finite: {found['tensor']} holds {found['nonfinite_values']} NaN/Inf of "
        f"{found['numel']} values on input set {found['input_set']}, call {found['call']} ({found['phase']})"
    )
