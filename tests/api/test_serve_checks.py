"""``serve`` checks the forward as ``run`` does (:mod:`surrobench.execution.sanity`): NaN/Inf in the first output
of a padded size marks its policy ``nonfinite`` (run's status) and leaves it unserved, the other policies served and
the run complete; memory that grows on every batch is a note of the record, in the words of ``run``'s warning."""

from __future__ import annotations

import contextlib

import pytest
import torch
from torch import nn

from surrobench.api.serve import serve
from surrobench.errors import UsageError


class SecondOutputNaN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 1, 1)

    def forward(self, x):
        y = self.conv(x)
        return y, y * float("nan")


class Leaks(nn.Module):
    """Keeps 4 MiB (written, so resident) from every batch."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.kept = nn.Conv2d(3, 1, 1), []

    def forward(self, x):
        self.kept.append(torch.ones(2**20))
        return self.conv(x)


class NaNPastBatch1(nn.Module):
    """Finite at batch 1, all NaN at a larger batch (torch.full): a bug that only batching shows."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 1, 1)

    def forward(self, x):
        y = self.conv(x)
        return y if x.shape[0] == 1 else torch.full_like(y, float("nan"))


def _serve(model, rates, **options):
    settings = dict(max_batch="1", max_wait_ms=1, duration_s=0.4, min_requests=0, warmup_s=0.05, shapes="8")
    return serve(model, **{**settings, **options}, rates=rates, device="cpu", threads=1, warmup=1, p99_ms=1000.0)


def test_a_nan_in_a_second_output_marks_the_policy_nonfinite_unserved():
    record = _serve(SecondOutputNaN(), "20")
    (policy,) = record.policies
    assert policy.points == () and policy.nonfinite["tensor"] == "output[1]"
    assert (policy.nonfinite["batch"], policy.nonfinite["phase"]) == (1, "first")


def test_a_policy_nonfinite_only_when_batched_keeps_what_the_others_measured(tmp_path):
    from surrobench.records.serve import serve_from_json
    from surrobench.results.serve_store import load_serve
    from surrobench.results.store import ResultStore

    db = tmp_path / "s.db"
    record = _serve(NaNPastBatch1(), "20", max_batch="1,2", db=db)
    one, two = record.policies
    assert len(one.points) == 1 and one.nonfinite is None
    assert two.points == () and two.nonfinite["batch"] == 2 and two.nonfinite["nonfinite_values"] > 0
    assert sum("batch<=2 wait<=1ms" in n and "not finite" in n for n in record.notes) == 1  # the line printed
    with ResultStore(db) as store:
        assert store.run_state(record.run_id) == "complete"
        assert load_serve(store, record.run_id) == serve_from_json(record.to_json())
        (summary,) = store.list_runs()
    assert summary.n_failed == 1 and summary.n_points == 1


def test_a_forward_that_leaks_is_a_note_of_the_served_record():
    record = _serve(Leaks(), "30,40,50")
    (note,) = [n for n in record.notes if "memory grew" in n]
    assert "MiB per call" in note


class RaisesOnTheThirdCall(nn.Module):
    """Serves its first calls (the build, the first call and one warm-up), then raises as a model bug would."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.calls = nn.Conv2d(3, 1, 1), 0

    def forward(self, x):
        self.calls += 1
        if self.calls > 2:
            raise RuntimeError("index 7 is out of bounds\nfor dimension 0")
        return self.conv(x)


def test_a_model_that_raises_stops_serve_in_one_line_with_the_run_stored(tmp_path):
    from surrobench.errors import Stopped
    from surrobench.results.store import ResultStore

    db = tmp_path / "s.db"
    with pytest.raises(Stopped) as cut:
        _serve(RaisesOnTheThirdCall(), "20", db=db)
    run_id = cut.value.partial.run_id  # the one line names the run kept, as an interrupted serve's does
    assert str(cut.value).endswith(
        f"RuntimeError: index 7 is out of bounds for dimension 0; 0 load point(s) stored as run {run_id}"
    )
    with ResultStore(db) as store:
        assert store.run_state(run_id) == "interrupted"
    with pytest.raises(UsageError, match="RuntimeError: index 7 is out of bounds for dimension 0"):
        _serve(RaisesOnTheThirdCall(), "20")  # no database: the same one line


class FailsAfterTheFirstCall(nn.Module):
    """Passes serve's check of a model object (the first call of any copy), then fails as ``failure`` says:
    returns None, or calls sys.exit."""

    calls = 0

    def __init__(self, failure: str) -> None:
        super().__init__()
        self.conv, self.failure = nn.Conv2d(3, 1, 1), failure
        type(self).calls = 0  # counted over the copies serve builds

    def forward(self, x):
        type(self).calls += 1
        if type(self).calls == 1:
            return self.conv(x)
        if self.failure == "exit":
            raise SystemExit(3)
        return None


@pytest.mark.parametrize(
    "failure, error",
    [("none", "ModelOutputError: model forward returned NoneType"), ("exit", "the model called sys.exit(3)")],
)
def test_a_forward_returning_none_or_exiting_stops_serve_as_a_raise_does(tmp_path, failure, error):
    from surrobench.errors import Stopped
    from surrobench.results.store import ResultStore

    with pytest.raises(Stopped) as cut:
        _serve(FailsAfterTheFirstCall(failure), "20", db=tmp_path / "s.db")
    assert error in str(cut.value) and cut.value.partial.notes[-1].startswith("stopped by ")
    with ResultStore(tmp_path / "s.db") as store:
        assert store.run_state(cut.value.partial.run_id) == "interrupted"


class NaNAfterTheWarmUp(nn.Module):
    """Finite on its first two calls (the first call and one warm-up), NaN from then on."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.calls = nn.Conv2d(3, 1, 1), 0

    def forward(self, x):
        self.calls += 1
        y = self.conv(x)
        return y if self.calls <= 2 else torch.full_like(y, float("nan"))


def test_an_output_that_turns_nonfinite_while_served_keeps_its_points():
    record = _serve(NaNAfterTheWarmUp(), "20")
    (policy,) = record.policies
    assert len(policy.points) == 1 and policy.nonfinite["phase"] == "end" and policy.nonfinite["batch"] == 1


def test_every_execution_setting_is_served_and_recorded():
    # matmul_precision reached the served config, but not its record
    record = _serve(nn.Conv2d(3, 1, 1), "20", matmul_precision="high")
    assert (record.workload["matmul_precision"], record.workload["threads"]) == ("high", 1)


def test_a_model_object_that_calls_sys_exit_at_once_is_refused_in_one_line():
    class Exits(nn.Module):
        def forward(self, x):
            raise SystemExit(3)

    with pytest.raises(UsageError, match=r"forward fails on the inputs built for it \(1x3x8x8\): SystemExit: 3"):
        _serve(Exits(), "20")


def test_a_busy_host_is_read_as_run_reads_it_other_processes_cpus_while_served(monkeypatch):
    """A trial: a spinning process beside serve kept 1.0 of 2 CPUs busy, the 1-minute load read 1.71 at the end, and
    serve said nothing; run said "other processes used 1.0 of 2". serve measures them over its policies'
    measurements, as run does over its timed calls: each policy's steps built first, their build not counted."""
    import surrobench.api.serve as serve_api

    events = []
    # two policies, 10 s each: 12 CPU s busy on our CPUs, 2 of them ours; between them the second policy's build,
    # its compiler's workers busy 86 CPU s (they are other processes): not a measurement
    readings = iter([(0.0, 0.0, 0.0), (10.0, 12.0, 2.0), (20.0, 100.0, 4.0), (30.0, 112.0, 6.0)])
    monkeypatch.setattr(serve_api, "cpu_times", lambda: (events.append("read"), next(readings))[1])
    service = serve_api.model_service

    @contextlib.contextmanager
    def built(*args):
        with service(*args) as steps:
            events.append("built")
            yield steps

    monkeypatch.setattr(serve_api, "model_service", built)
    monkeypatch.setattr(serve_api, "usable_cpus", lambda: 2)
    monkeypatch.setattr(serve_api, "host_load", lambda: (1.71, 2))
    record = _serve(nn.Conv2d(3, 1, 1), "20", max_batch="1,2")
    assert events == ["built", "read", "read", "built", "read", "read"]
    assert record.workload["other_cpus"] == pytest.approx(1.0) and record.workload["usable_cpus"] == 2
    assert sum(n.startswith("busy host: other processes used 1.0 of 2") for n in record.notes) == 1
