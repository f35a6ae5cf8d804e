"""The host's floor under a kernel-side remedy's gain
(:data:`~surrobench.records.vocab.KERNEL_SIDE_REMEDIES`): no kernel starts before the host launched it, so such
a remedy saves at most latency less host submission time (docs/sources.md, method §4; evidence:
docs/benchmarks/h200-counters.md). Submission is :data:`surrobench.records.run.HOST_SUBMIT_KEY`; not capped where
the model syncs or there is no trace."""

from __future__ import annotations

from dataclasses import dataclass, replace

from surrobench.analysis.evidence import ConfigEvidence
from surrobench.records.findings import Evidence, Finding
from surrobench.records.vocab import KERNEL_SIDE_REMEDIES


@dataclass(frozen=True)
class HostFloor:
    """One config's median unprofiled latency and host submission time, ms. Raises ValueError: not positive and finite."""

    latency_ms: float
    host_submit_ms: float

    def __post_init__(self) -> None:
        for name in ("latency_ms", "host_submit_ms"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and 0 < value < float("inf")):
                raise ValueError(f"{name} must be a positive number of ms, got {value!r}")

    @property
    def kernel_side_ms(self) -> float:
        """The most a kernel-side remedy can save, ms: the latency above the host's submission time, >= 0."""
        return max(self.latency_ms - self.host_submit_ms, 0.0)

    def to_json(self) -> dict:
        """``{"latency_ms", "host_submit_ms"}``."""
        return {"latency_ms": self.latency_ms, "host_submit_ms": self.host_submit_ms}

    @classmethod
    def from_json(cls, d: dict) -> HostFloor:
        """The inverse of :meth:`to_json`. Raises KeyError or ValueError for a malformed object."""
        return cls(d["latency_ms"], d["host_submit_ms"])


def host_floors(evidence: list[ConfigEvidence]) -> dict[str, HostFloor]:
    """``{label: HostFloor}`` of CUDA configs with a submission time, a trace and no model sync."""
    out = {}
    for ev in evidence:
        r = ev.result
        if r is None or r.device != "cuda" or r.latency_ms is None or not r.host_submit_ms or ev.label is None:
            continue
        if ev.facts is None or ev.facts.model_syncs > 0:
            continue
        out[ev.label] = HostFloor(r.latency_ms.median, r.host_submit_ms)
    return out


def cap_at_host_floor(findings: list[Finding], floors: dict[str, HostFloor]) -> list[Finding]:
    """``findings`` with all-kernel-side gains capped at :attr:`HostFloor.kernel_side_ms`; order kept."""
    out = []
    for f in findings:
        floor = floors.get(f.config or "")
        remedies, gain = set(f.remedies), f.estimated_gain_ms
        kernel_side = bool(remedies) and remedies <= set(KERNEL_SIDE_REMEDIES)
        if floor is None or gain is None or not kernel_side or gain <= floor.kernel_side_ms:
            out.append(f)
            continue
        cap = floor.kernel_side_ms
        text = f"the host submits a step in {floor.host_submit_ms:.3f} ms of its {floor.latency_ms:.3f} ms: faster "
        why = Evidence("run", text + f"kernels alone save at most {cap:.3f} ms (estimated {gain:.3f} ms)", cap, "ms")
        out.append(replace(f, estimated_gain_ms=cap, evidence=(*f.evidence, why)))
    return out
