"""The planted-bottleneck suite (``surrobench scenarios``): each scenario plants one bottleneck, whose kind must be
the top finding; a control (a healthy workload) passes only when its top finding is the expected healthy verdict
and no finding is an alarm (severity other than ``info``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path

from surrobench.analysis.thresholds import DEFAULT_THRESHOLDS, Thresholds, check_thresholds
from surrobench.api.benchmark import open_store, sweep_plan
from surrobench.api.diagnose import diagnose_workload
from surrobench.collect.profile_phase import ProfileOptions, prepare_trace_dir
from surrobench.collect.torch_profiler import ProfileSchedule
from surrobench.errors import UsageError
from surrobench.execution.config import MIN_ITERS, MIN_WARMUP, check_iterations
from surrobench.execution.sweep import resolve_device
from surrobench.records import schemas
from surrobench.records.findings import Finding
from surrobench.workload.scenarios import PREFIX


@dataclass(frozen=True)
class Scenario:
    """One planted bottleneck: the model ``scenario:<name>``, the finding kind ``expected`` first, its config on
    CUDA (``shape``, ``batch``, ``precision``) and on a CPU (``cpu_shape``; None: GPU only, ``cpu_skip`` says why);
    a ``control`` is a healthy workload, no alarm allowed."""

    name: str
    expected: str
    shape: str
    batch: int
    precision: str = "fp32"
    cpu_shape: str | None = None
    control: bool = False
    cpu_skip: str = "needs a CUDA GPU"

    @property
    def model(self) -> str:
        return PREFIX + self.name


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("sync-in-forward", "host_sync", "128", 1),
    Scenario("tiny-mlp", "launch_bound", "64", 1),
    Scenario("groupnorm-large", "memory_bound", "512", 1, cpu_shape="64"),
    Scenario("pageable-h2d", "h2d_transfer", "1024", 8),
    Scenario("stream-wait", "stream_serialization", "128", 1),
    Scenario(
        "gemm-bf16",
        "compute_bound",
        "4096",
        1,
        precision="bf16",
        control=True,
        cpu_skip="needs a CUDA GPU: the healthy verdict is a GEMM near the tensor-core peak; a CPU's bf16 "
        "matmul (where it has one) at a size the CPU suite can run is memory- or dispatch-bound",
    ),
)


def select(only: str | Iterable[str] | None) -> list[Scenario]:
    """The scenarios named in ``only`` (comma-separated, or a sequence of names), or all.

    Raises:
        UsageError: an unknown name.
    """
    if only is None:
        return list(SCENARIOS)
    names = [n.strip() for n in (only.split(",") if isinstance(only, str) else only) if n.strip()]
    only = only if isinstance(only, str) else ",".join(names)
    known = {s.name: s for s in SCENARIOS}
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise UsageError.bad(
            "only", f"{only!r}: unknown scenario {', '.join(unknown) or '(none given)'}; known: {', '.join(known)}"
        )
    return [known[n] for n in names]


@dataclass(frozen=True)
class Outcome:
    """A scenario's verdict: top finding kind, pass/fail, the alarms raised on a control, and a note."""

    scenario: Scenario
    top_kind: str | None
    passed: bool | None  # None: skipped
    false_alarms: tuple[str, ...]
    note: str = ""


def judge(scenario: Scenario, findings: list[Finding]) -> Outcome:
    """Pass when the first of the ranked ``findings`` has the expected kind (and, for a control, no
    finding is an alarm)."""
    top = findings[0].kind if findings else None
    alarms = tuple(f"{f.kind} ({f.severity})" for f in findings if f.alarm) if scenario.control else ()
    return Outcome(scenario, top, top == scenario.expected and not alarms, alarms)


#: The suite's profiler schedule: :class:`~surrobench.collect.torch_profiler.ProfileSchedule`'s default steps.
SUITE_SCHEDULE = ProfileSchedule()


@dataclass(frozen=True)
class SuiteReport:
    """The suite's outcomes in scenario order, the ranked findings of each scenario that ran (by name), and
    the device it ran on."""

    device: str
    outcomes: tuple[Outcome, ...]
    findings: dict[str, tuple[Finding, ...]]

    @property
    def failed(self) -> bool:
        """Whether a scenario that ran did not pass (a regression of the diagnosis)."""
        return any(o.passed is False for o in self.outcomes)

    def to_json(self) -> dict:
        """``surrobench/scenarios-v4``: each outcome with its findings."""
        return {
            "schema": schemas.SCENARIOS,
            "outcomes": [
                {
                    "scenario": o.scenario.name,
                    "expected": o.scenario.expected,
                    "top_kind": o.top_kind,
                    "passed": o.passed,
                    "false_alarms": list(o.false_alarms),
                    "note": o.note,
                    "findings": [f.to_json() for f in self.findings.get(o.scenario.name, ())],
                }
                for o in self.outcomes
            ],
        }


def run_scenarios(
    only: str | Iterable[str] | None = None,
    *,
    device: str = "auto",
    db: str | Path | None = None,
    trace_dir: str | Path | None = None,
    warmup: int = MIN_WARMUP,
    iters: int = MIN_ITERS,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> SuiteReport:
    """Time, profile (:data:`SUITE_SCHEDULE`) and diagnose each chosen scenario on its config for the device (none
    there: skipped, the reason its note) and judge it (:func:`judge`). ``db``: where each run is stored (None: in
    memory); ``trace_dir``: for the traces (None: a temporary folder).

    Raises:
        UsageError: an unknown scenario, bad ``warmup`` / ``iters``
            (:func:`~surrobench.execution.config.check_iterations`) or ``thresholds``, a schedule longer than
            ``iters``, an unusable trace folder, no GPU for ``cuda``.
    """
    chosen = select(only)
    check_iterations(warmup=warmup, iters=iters)
    SUITE_SCHEDULE.check(iters)
    check_thresholds(thresholds)
    used = resolve_device(device)
    outcomes, findings = [], {}
    with ExitStack() as stack:
        folder = trace_dir if trace_dir is not None else stack.enter_context(tempfile.TemporaryDirectory())
        options = ProfileOptions(schedule=SUITE_SCHEDULE, trace_dir=prepare_trace_dir(Path(folder), "trace_dir"))
        store = stack.enter_context(open_store(db))
        for s in chosen:
            shape = s.shape if used == "cuda" else s.cpu_shape
            if shape is None:
                outcomes.append(Outcome(s, None, None, (), s.cpu_skip))
                continue
            plan = sweep_plan(
                s.model,
                shapes=shape,
                batches=s.batch,
                precisions=s.precision,
                device=used,
                warmup=warmup,
                iters=iters,
                tag=f"scenario:{s.name}",
            )
            record, found, _, _ = diagnose_workload(plan, store, options, thresholds)
            findings[s.name] = tuple(found)
            outcomes.append(replace(judge(s, found), note=f"run {record.run_id}"))
    return SuiteReport(used, tuple(outcomes), findings)
