"""The scenarios, the finding each should get, and how an outcome is judged.

Each scenario plants one bottleneck: its expected kind must be the top finding. A control
(healthy workload) passes only when its top finding is the expected healthy verdict and no finding is an
alarm (severity other than ``info``).
"""

from __future__ import annotations

from dataclasses import dataclass

from surrobench.errors import UsageError
from surrobench.records.findings import Finding
from surrobench.workload.scenarios import PREFIX


@dataclass(frozen=True)
class Scenario:
    """One planted bottleneck.

    Attributes:
        name: scenario name; the model is ``scenario:<name>``.
        expected: the finding kind that must come first.
        shape, batch, precision: the config on CUDA.
        cpu_shape: the (smaller) shape on the CPU, None when the expected verdict holds only on a GPU.
        control: a healthy workload: no alarm allowed.
        cpu_skip: why the scenario does not run on a CPU (when ``cpu_shape`` is None).
    """

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


def select(only: str | None) -> list[Scenario]:
    """The scenarios named in ``only`` (comma-separated), or all.

    Raises:
        UsageError: an unknown name.
    """
    if only is None:
        return list(SCENARIOS)
    names = [n.strip() for n in only.split(",") if n.strip()]
    known = {s.name: s for s in SCENARIOS}
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise UsageError(
            f"--only {only!r}: unknown scenario {', '.join(unknown) or '(none given)'}; known: {', '.join(known)}"
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
