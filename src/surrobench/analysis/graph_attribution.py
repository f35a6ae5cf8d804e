"""Kernels a CUDA graph replays (or a compiled region launches) credited to the ops and modules of the eager step.

A replayed kernel has no launching op in the profile (:data:`surrobench.records.kernels.ORIGINS`:
``graph_replay``): the capture recorded the eager step's launches once and the replay issues them without the
host. The same kernels ran in the eager step of the same config, each launched by a known op in a known module.
Matching by name credits each replayed kernel's time to the (op, module) rows that launched that name in the eager
step, in proportion to their eager launches (calls): a name one op launched goes to it whole. Names the eager step
never launched (a compiled region's fused Triton kernels) stay unattributed. docs/design.md ("Attributing
replayed kernels") gives why matching was chosen over profiling the capture or ncu's graph profiling, and
benchmarks/gpu_evidence.sh measures its coverage on the H200.
"""

from __future__ import annotations

from dataclasses import replace

from surrobench.analysis.evidence import ConfigEvidence
from surrobench.records.kernels import KernelStat, KernelTable

#: Origins whose op is lost and may be found in the eager step (:data:`surrobench.records.kernels.ORIGINS`).
MATCHABLE = ("graph_replay", "compiled", "no_op")


def match_eager(table: KernelTable, eager: KernelTable) -> KernelTable:
    """``table`` with each row whose op is lost (:data:`MATCHABLE`) split over the eager rows of the same kernel
    name that have an op, in proportion to their calls, with origin ``matched_eager``; rows that match no eager
    row, and rows with an op, are kept as they are. Times, calls and shares keep their totals: shares are of
    ``table.total_us``."""
    owners: dict[str, list[KernelStat]] = {}
    for k in eager.kernels:
        if k.op is not None:
            owners.setdefault(k.name, []).append(k)
    rows: list[KernelStat] = []
    for k in table.kernels:
        found = owners.get(k.name) if k.op is None and k.origin in MATCHABLE else None
        if not found:
            rows.append(k)
            continue
        calls = sum(o.calls for o in found)
        for o in found:
            part = o.calls / calls
            us = k.device_us * part
            share = us / table.total_us if table.total_us else 0.0
            owner = dict(op=o.op, module=o.module, origin="matched_eager")
            rows.append(replace(k, calls=max(round(k.calls * part), 1), device_us=us, share=share, **owner))
    return replace(table, kernels=tuple(sorted(rows, key=lambda r: -r.device_us)))


def attribute_by_eager(evidence: list[ConfigEvidence]) -> list[ConfigEvidence]:
    """``evidence`` with the kernel table of each CUDA-graph or compiled config matched against the eager config of
    the same model, shapes, batch, precision and device (:func:`match_eager`), when the run profiled one; other
    configs unchanged."""
    eager = {
        _sibling_key(ev): ev.kernel_table
        for ev in evidence
        if ev.result is not None and ev.result.mode == "eager" and ev.kernel_table is not None
    }
    out = []
    for ev in evidence:
        reference = eager.get(_sibling_key(ev)) if ev.result is not None and ev.result.mode != "eager" else None
        if reference is None or ev.kernel_table is None:
            out.append(ev)
        else:
            out.append(replace(ev, kernel_table=match_eager(ev.kernel_table, reference)))
    return out


def _sibling_key(ev: ConfigEvidence) -> tuple:
    r = ev.result
    return (r.model, r.input_shape, r.inputs, r.batch, r.precision, r.device)
