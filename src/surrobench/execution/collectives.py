"""Time inside the torch.distributed calls a model makes in its forward (waiting for the slowest peer included),
per timed step: :class:`CollectiveRecorder` wraps the ``torch.distributed`` functions and records one interval per
call, by CUDA events on the current stream (a blocking NCCL call makes it wait for the NCCL stream; PyTorch docs,
"CUDA semantics") or, on the CPU, the host clock.

``async_op=True`` calls and ``batch_isend_irecv`` end at the last ``wait()`` on their works. ``isend``/``irecv`` called
one by one are not wrapped (torch checks a ``P2POp``'s function by identity). A call nested in another timed call counts
once. Functions bound before the recorder started (``from torch.distributed import all_reduce``) are not seen.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterator

import numpy as np
import torch
import torch.distributed as dist

from surrobench.records.stats import NS_PER_MS

#: The ``torch.distributed`` calls that block (or, on NCCL, order the current stream) until done.
BLOCKING_CALLS = tuple(
    "all_reduce all_gather all_gather_into_tensor all_gather_object reduce_scatter reduce_scatter_tensor broadcast"
    " reduce all_to_all all_to_all_single gather scatter barrier send recv".split()
)
#: Calls that always return works to wait on.
WORK_CALLS = ("batch_isend_irecv",)


class _Mark:
    """A point in time: a CUDA event on the current stream, or the host clock (ns)."""

    __slots__ = ("event", "host_ns")

    def __init__(self, cuda: bool) -> None:
        self.event = None
        self.host_ns = 0
        if cuda:
            self.event = torch.cuda.Event(enable_timing=True)
            self.event.record()
        else:
            self.host_ns = time.perf_counter_ns()

    def since_ns(self, origin: _Mark) -> int:
        """Nanoseconds from ``origin`` (events completed)."""
        if self.event is not None:
            return int(round(origin.event.elapsed_time(self.event) * NS_PER_MS))
        return self.host_ns - origin.host_ns


class _Interval:
    __slots__ = ("name", "start", "end")

    def __init__(self, name: str, start: _Mark, end: _Mark) -> None:
        self.name, self.start, self.end = name, start, end


class _TimedWork:
    """A torch.distributed work whose ``wait()`` extends its interval to when the wait returned."""

    def __init__(self, work, interval: _Interval, recorder: CollectiveRecorder) -> None:
        self._work, self._interval, self._recorder = work, interval, recorder

    def wait(self, *args, **kwargs):
        result = self._work.wait(*args, **kwargs)
        self._interval.end = self._recorder.mark()
        return result

    def __getattr__(self, name: str):
        return getattr(self._work, name)


class CollectiveRecorder:
    """The intervals of torch.distributed calls in the timed steps of one config on ``device``: ``with
    recorder.patched():`` around the config, ``begin_step()`` before each timed call (calls outside a step pass
    unrecorded), then, after a synchronize, :meth:`step_intervals_ns`."""

    def __init__(self, device: str) -> None:
        self._cuda = device == "cuda"
        self._steps: list[tuple[_Mark, list[_Interval]]] = []
        self._depth = 0
        self._recording = False

    def mark(self) -> _Mark:
        return _Mark(self._cuda)

    def begin_step(self) -> None:
        self._recording = True
        self._steps.append((self.mark(), []))

    def stop(self) -> None:
        self._recording = False

    def _wrap(self, name: str, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def timed(*args, **kwargs):
            if not self._recording or self._depth:
                return fn(*args, **kwargs)
            self._depth += 1
            try:
                start = self.mark()
                result = fn(*args, **kwargs)
                interval = _Interval(name, start, self.mark())
            finally:
                self._depth -= 1
            self._steps[-1][1].append(interval)
            if isinstance(result, list):
                return [_TimedWork(w, interval, self) for w in result]
            if result is not None and hasattr(result, "wait"):
                return _TimedWork(result, interval, self)
            return result

        return timed

    @contextlib.contextmanager
    def patched(self) -> Iterator[CollectiveRecorder]:
        """Wrap the ``torch.distributed`` functions for the block and restore them after."""
        saved = {name: getattr(dist, name) for name in (*BLOCKING_CALLS, *WORK_CALLS) if hasattr(dist, name)}
        try:
            for name, fn in saved.items():
                setattr(dist, name, self._wrap(name, fn))
            yield self
        finally:
            self._recording = False
            for name, fn in saved.items():
                setattr(dist, name, fn)

    def step_intervals_ns(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per recorded step, the ``(start, end)`` arrays (ns from the step's origin, shape ``(calls,)``)
        of its calls. Call after the device finished (events must have completed)."""
        out = []
        for origin, intervals in self._steps:
            start = np.array([iv.start.since_ns(origin) for iv in intervals], dtype=np.int64)
            end = np.array([iv.end.since_ns(origin) for iv in intervals], dtype=np.int64)
            out.append((start, end))
        return out
