"""A serve record's tables (per policy, the peak search's steps), and the capacity comparison of two serve runs,
as rich and markdown; no matplotlib."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table

from surrobench.execution.batcher import MAX_GAP_S
from surrobench.records.config import SETTINGS_NOTE
from surrobench.records.serve import LoadPoint, Percentile, PolicyResult, ServeRecord
from surrobench.report.cells import fmt
from surrobench.report.escape import md_escape, md_table, rich_escape
from surrobench.report.fit import columns as fit_columns, fit_table, plain_table

if TYPE_CHECKING:
    from surrobench.api.compare import ComparedServeRuns

COLUMNS = ("asked rps", "offered rps", "achieved rps", "requests", "P50 ms", "P95 ms", "P99 ms [95% CI]", "SLO")
COLUMNS += ("max ms", "queue", "compute", "batch", "busy", "dropped", "late", "gen", "pass")
#: What batches an endpoint's requests, in place of a policy.
ENDPOINT_POLICY = "the endpoint's own batching"


def rps(value: float) -> str:
    """A rate, requests/s: one decimal from 10 up, three significant digits below (slow models serve < 1 rps)."""
    return f"{value:.1f}" if value >= 10 else f"{value:.3g}"


def latency_cell(p: Percentile) -> str:
    """A percentile's value, ms, ``>`` before it when it is a lower bound (it falls among dropped requests)."""
    return f"{'>' if p.lower_bound else ''}{p.value_ms:.2f}"


def point_cells(p: LoadPoint) -> list[str]:
    """One load point as :data:`COLUMNS` cells (shares as %; ``-`` for an unbounded interval side or what an endpoint does not show)."""
    p99 = p.percentile(0.99)
    asked = rps(p.target_rps) if p.target_rps else f"c={p.concurrency}" if p.concurrency else "-"
    batch = "-" if p.mean_batch is None else f"{p.mean_batch:.1f}/{p.mean_padded_batch:.1f}"
    return [
        asked,
        rps(p.offered_rps),
        rps(p.achieved_rps),
        str(p.requests),
        latency_cell(p.percentile(0.5)),
        latency_cell(p.percentile(0.95)),
        f"{latency_cell(p99)} [{fmt(p99.ci95_ms[0], '.2f')}, {fmt(p99.ci95_ms[1], '.2f')}]",
        "-" if p.slo_attainment is None else f"{p.slo_attainment:.1%}",
        fmt(p.max_ms, ".2f"),
        fmt(p.queue_share, ".0%"),
        fmt(p.compute_share, ".0%"),
        batch,
        fmt(p.device_busy, ".0%"),
        str(p.dropped),
        "-" if p.late is None else str(p.late),
        f"{p.generator_overhead_share:.1%}",
        {None: "-", True: "yes", False: "no"}[p.passed],
    ]


def policy_title(record: ServeRecord, result: PolicyResult) -> str:
    where = record.label()
    policy = result.policy.label() if result.policy else ENDPOINT_POLICY
    line = f"{where}, {record.arrival} arrivals, {policy}" + (", output nonfinite" if result.nonfinite else "")
    c = result.capacity
    cut = record.cut_short_p99_ms()  # a search cut short: its bracket so far, judged at its target
    if c is not None and c.infeasible:
        return f"{line}: {c.infeasible}"
    if (ends := result.capacity_offered_rps() if c else result.bracket() if cut else None) is None:
        return line
    # one basis, the rates the loads offered, said; an unresolved boundary said beside the bracket, before the rest
    upper = rps(ends[1]) if ends[1] is not None else "not reached"
    unresolved = f"; unresolved within the loads' noise: {why}" if (why := result.capacity_unresolved(cut)) else ""
    if c is None:
        line += f": cut short, capacity in [{rps(ends[0])}, {upper}) rps offered at P99 <= {record.target_p99_ms:g} ms"
        return line + unresolved
    failing = upper if ends[1] is None else f"{upper} offered"
    line += f": capacity {rps(ends[0])} rps offered at P99 <= {c.target_p99_ms:g} ms (first failing {failing})"
    line += unresolved
    if c.predicted_rps is not None:  # 0: the simulation over the unloaded service times passed no rate
        err = result.prediction_error() if c.predicted_rps else None
        line += f"; predicted {rps(c.predicted_rps)}" if c.predicted_rps else "; predicted: no rate"
        middle = "the middle of the two offered" if ends[1] else "the capacity"
        line += f", {err:+.0%} off {middle}" if err is not None else ""
    return line + (f"; searched in {c.search_s:.0f} s" if c.search_s is not None else "")


UNLOADED_COLUMNS = ("batch", "isolated P50 ms", "isolated P99 ms", "back-to-back P50 ms", "back-to-back P99 ms")
UNLOADED_COLUMNS += ("loaded ms", "gap ms", "loop ms", "n")
UNLOADED_TITLE = "unloaded latency per batch size (isolated: after an idle gap; back to back: as under load)"
#: The legend of ``gap ms`` (:func:`surrobench.execution.batcher.idle_threshold`), under the unloaded table.
GAP_NOTE = "gap ms: the shortest idle that made the next batch slower than back to back (isolated: timed after it); "
GAP_NOTE += f"{MAX_GAP_S * 1e3:g} ms, the longest gap probed, where none did"


SEARCH_COLUMNS = ("step", "phase", "rate rps", "P99 ms", "pass")
SEARCH_TITLE = "peak search (MLPerf LoadGen FindPeakPerformance)"


#: Narrow-terminal fitting: rates, requests, P99, drops and verdict kept whole; the rest dropped by ``minor``.
_FIT = {"gen": 10, "SLO": 9, "late": 9, "compute": 8, "queue": 7, "max ms": 6, "batch": 5, "busy": 4, "P95 ms": 3}
_FIT |= {"P50 ms": 2}


def sections(record: ServeRecord, every: bool = False) -> list[tuple[str, tuple[str, ...], list[list[str]]]]:
    """The record's tables as ``(title, columns, rows of cells)``, in order: the unloaded latency, then per policy
    with load points (``every``: each policy; one without was answered without a load, or was nonfinite: its title,
    best_line or a note says why) its points and its search's steps. The terminal, markdown and HTML render these."""
    unloaded = []  # per padded batch size
    for u in record.unloaded:
        ms = (u.isolated_p50_ms, u.isolated_p99_ms, u.back_to_back_p50_ms, u.back_to_back_p99_ms, u.saturated_ms)
        counts = f"{len(u.isolated_ms)}/{len(u.back_to_back_ms)}"
        unloaded.append([str(u.batch), *(fmt(v, ".2f") for v in ms), f"{u.gap_ms:.1f}", fmt(u.loop_ms), counts])
    out = [(UNLOADED_TITLE, UNLOADED_COLUMNS, unloaded)] if unloaded else []
    for result in (r for r in record.policies if r.points or every):
        out.append((policy_title(record, result), COLUMNS, [point_cells(p) for p in result.points]))
        if result.capacity is not None:  # its peak search's steps, in the order tried
            p99 = ["none completed" if s.p99_ms is None else f"{s.p99_ms:.2f}" for s in result.capacity.steps]
            steps = enumerate(zip(result.capacity.steps, p99), 1)
            rows = [[str(i), s.phase, rps(s.rate_rps), ms, "yes" if s.passed else "no"] for i, (s, ms) in steps]
            out.append((SEARCH_TITLE, SEARCH_COLUMNS, rows))
    return out


def section_note(names: tuple[str, ...]) -> str:
    """The note under a :func:`sections` table of columns ``names``: :data:`GAP_NOTE` under the unloaded one."""
    return GAP_NOTE if names == UNLOADED_COLUMNS else ""


def serve_tables(record: ServeRecord, width: int | None = None) -> list[Table]:
    """:func:`sections` as tables fitted to ``width`` (None: no limit)."""
    tables, unloaded = [], {"loop ms": 4, "n": 3, "gap ms": 2, "loaded ms": 1}
    for title, names, rows in sections(record):
        fit = unloaded if names == UNLOADED_COLUMNS else _FIT
        cols = fit_columns(names, minor=fit, wrap=fit)
        cells = [[rich_escape(c) for c in row] for row in rows]
        tables.append(fit_table(cols, cells, width, title=rich_escape(title), caption=section_note(names) or None))
    return tables


def serve_markdown(record: ServeRecord) -> str:
    """:func:`sections` as markdown, with the best policy and notes."""
    parts = []
    for title, names, rows in sections(record):
        note = section_note(names)
        note = f"\n{md_escape(note)}\n" if note else ""
        parts.append(f"{md_escape(title)}\n\n{md_table(names, rows)}{note}")
    line = best_line(record)
    parts += [md_escape(line)] if line else []
    parts += ["notes:\n\n" + "".join(f"- {md_escape(n)}\n" for n in record.notes)] if record.notes else []
    return "\n".join(parts) if parts else f"{md_escape(record.label())}: no load measured\n"


def best_line(record: ServeRecord) -> str | None:
    """The policy with the highest capacity, when several were searched; that no rate meets the target, with the
    unloaded batch-1 latency, when no searched rate passed; without a search, that no capacity was (each load point
    is what its offered load achieved) and one load's rates, goodput and P99."""
    if why := record.infeasible():
        return why
    tried = [s.rate_rps for p in record.policies if p.capacity is not None for s in p.capacity.steps]
    if tried and all(p.capacity.capacity_rps <= 0 for p in record.policies if p.capacity is not None):
        line = (
            f"no rate meets P99 <= {record.target_p99_ms:g} ms: every rate tried failed, down to {rps(min(tried))} rps"
        )
        if one := next((u for u in record.unloaded if u.batch == 1), None):
            line += f" (unloaded batch 1: isolated P99 {one.isolated_p99_ms:.3g} ms, back to back {one.back_to_back_p50_ms:.3g} ms median)"
        return line
    best, points = record.best(), [p for r in record.policies for p in r.points]
    if best is None and record.find_max is False and points:
        if len(points) > 1:
            return f"{len(points)} loads, no capacity searched: each row is what its offered load achieved"
        p = points[0]
        line = f"one load of {p.load()}, no capacity searched: offered {rps(p.offered_rps)}, achieved {rps(p.achieved_rps)} rps"
        if p.goodput_rps is not None:
            line += (
                f", goodput {rps(p.goodput_rps)} rps ({p.slo_attainment:.1%} within P99 <= {record.target_p99_ms:g} ms)"
            )
        return f"{line}, P99 {latency_cell(p.percentile(0.99))} ms"
    if best is None or len(record.policies) < 2 or best.policy is None:
        return None
    return f"best policy: {best.policy.label()}, {rps(best.capacity_offered_rps()[0])} rps at P99 <= {record.target_p99_ms:g} ms"


CAPACITY_COLUMNS = ("run", "id", "served", "best policy", "capacity rps", "first failing rps")


def capacity_rows(pair: ComparedServeRuns) -> list[list[str]]:
    """BASE's and NEW's row of :data:`CAPACITY_COLUMNS` (the search's bracket, ``-`` without a load offered)."""
    c = pair.capacity
    sides = (("BASE", pair.base, c.base_policy, c.base_rps), ("NEW", pair.new, c.new_policy, c.new_rps))
    rows = []
    for side, record, policy, (lo, hi) in sides:
        served_by = policy.label() if policy else ENDPOINT_POLICY
        upper = fmt(hi, ".1f", "not reached" if lo is not None else "-")  # "-": no load offered, nothing measured
        rows.append([side, record.run_id, record.label(), served_by, fmt(lo, ".1f"), upper])
    return rows


def capacity_line(pair: ComparedServeRuns) -> str:
    """NEW / BASE capacity (why none where BASE's is 0 or unmeasured) with the interval of the two brackets judged, the
    verdict, each side whose capacity lies within its loads' noise with the bracket it was judged by, and the settings
    that differ (:data:`~surrobench.records.config.SETTINGS_NOTE`)."""
    c, (lo, hi) = pair.capacity, pair.capacity.ratio_interval
    after = "".join(
        f"; {k.upper()}'s capacity lies within its loads' noise, judged as [{a:.1f}, {fmt(b, '.1f')})"
        for k, (a, b) in c.noise_rps.items()
    )
    after += f"; {SETTINGS_NOTE.format(*c.settings_differ)}" if c.settings_differ else ""
    unmeasured = " and ".join(side for side, rps in (("BASE", c.base_rps), ("NEW", c.new_rps)) if rps[0] is None)
    why = f"{unmeasured} offered no load (answered infeasible at once)" if unmeasured else "BASE met no rate"
    ratio = fmt(c.ratio, ".2f") if c.ratio is not None else f"- ({why})"
    return f"NEW / BASE capacity {ratio} [{fmt(lo, '.2f')}, {fmt(hi, '.2f')}]: {c.verdict}{after}"


def capacity_table(pair: ComparedServeRuns, width: int | None = None) -> Table:
    """The two runs' capacities at the P99 target, the ratio line as the caption, fitted to ``width`` cells."""
    title, caption = f"capacity at P99 <= {pair.capacity.target_p99_ms:g} ms", rich_escape(capacity_line(pair))
    rows, right = capacity_rows(pair), CAPACITY_COLUMNS[4:]
    return plain_table(CAPACITY_COLUMNS, rows, title=title, caption=caption, right=right, escape=True, width=width)


def capacity_markdown(pair: ComparedServeRuns) -> str:
    """:func:`capacity_table` as Markdown: a heading, the table, the ratio line."""
    head = f"## Capacity at P99 <= {pair.capacity.target_p99_ms:g} ms\n\n"
    return head + md_table(CAPACITY_COLUMNS, capacity_rows(pair)) + f"\n{md_escape(capacity_line(pair))}\n"
