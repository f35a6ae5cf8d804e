"""The recorder of torch.distributed calls: intervals per timed step, async works, nesting, restoring."""

from __future__ import annotations

import time

import torch.distributed as dist

from surrobench.execution.collectives import CollectiveRecorder

SLEEP_S = 0.02


class _Work:
    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s

    def wait(self):
        time.sleep(self.delay_s)
        return True

    def is_completed(self) -> bool:
        return False


def _call_names(recorder: CollectiveRecorder) -> list[str]:
    """The distinct call names in the recorded steps, in first-seen order."""
    return list(dict.fromkeys(iv.name for _, intervals in recorder._steps for iv in intervals))


def test_blocking_and_async_calls_are_timed_per_step(monkeypatch):
    monkeypatch.setattr(dist, "all_reduce", lambda *a, **k: time.sleep(SLEEP_S))
    monkeypatch.setattr(dist, "batch_isend_irecv", lambda ops: [_Work(SLEEP_S), _Work(0.0)])
    original = dist.all_reduce
    recorder = CollectiveRecorder("cpu")
    with recorder.patched():
        assert dist.all_reduce is not original
        dist.all_reduce(None)  # before any step (cold start, warm-up): not recorded
        for _ in range(2):
            recorder.begin_step()
            dist.all_reduce(None)
            works = dist.batch_isend_irecv([])
            time.sleep(SLEEP_S)  # compute between the call and the wait counts as inside the call
            assert [w.wait() for w in works] == [True, True] and works[0].is_completed() is False
        recorder.stop()
        dist.all_reduce(None)
    assert dist.all_reduce is original
    steps = recorder.step_intervals_ns()
    assert len(steps) == 2 and _call_names(recorder) == ["all_reduce", "batch_isend_irecv"]
    for start, end in steps:
        lengths_s = (end - start) / 1e9
        assert len(start) == 2 and (start >= 0).all()
        assert lengths_s[0] >= SLEEP_S and lengths_s[1] >= 2 * SLEEP_S  # the batch ends at its last wait


def test_a_call_inside_a_timed_call_counts_once(monkeypatch):
    def outer(*args, **kwargs):
        dist.all_reduce(None)  # torch's own nesting (e.g. a collective built on another)

    monkeypatch.setattr(dist, "all_reduce", lambda *a, **k: None)
    monkeypatch.setattr(dist, "all_gather", outer)
    recorder = CollectiveRecorder("cpu")
    with recorder.patched():
        recorder.begin_step()
        dist.all_gather(None)
    ((start, _),) = recorder.step_intervals_ns()
    assert len(start) == 1 and _call_names(recorder) == ["all_gather"]
