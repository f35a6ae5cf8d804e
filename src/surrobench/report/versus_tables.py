"""A versus record's tables (terminal, markdown; no matplotlib) and two records compared."""

from __future__ import annotations

from rich.table import Table

from surrobench.report.escape import md_table, rich_escape
from surrobench.report.fit import plain_table

from surrobench.records.versus import BEYOND_COARSEST, BEYOND_FINEST, MATCHED, Match, VersusRecord

LEVEL_COLUMNS = ("level", "rel L2", "low", "mid", "high", "median ms", "95% CI ms", "batch ms", "front")
SURROGATE_COLUMNS = ("surrogate", "rel L2", "median ms", "speedup @ error", "95% CI", "error ratio @ time")
SURROGATE_COLUMNS += ("crossover level", "once ms", "amortized ms", "batch", "cases/s", "batched speedup @ error")


#: A time match past the ladder, in words: the surrogate's time is beyond every front level's, not its error.
TIME_STATUS = {BEYOND_FINEST: "slower than every level", BEYOND_COARSEST: "faster than every level"}


def _g(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


def match_text(match: Match) -> str:
    """``12.3x``, or where the error lies past the ladder with the bound (``>= 40x, more accurate than the ladder``)."""
    if match.status == MATCHED:
        return f"{match.speedup:.3g}x"
    if match.bound is None:
        return "no front"
    sign = ">=" if match.status == "more_accurate_than_ladder" else "<="
    return f"{sign} {match.bound:.3g}x ({match.status.replace('_', ' ')})"


def level_rows(record: VersusRecord) -> list[list[str]]:
    return [
        [
            level.name,
            _g(level.accuracy.error),
            *(_g(level.accuracy.bands[b], 2) for b in ("low", "mid", "high")),
            _g(level.timing.median_ms),
            f"{_g(level.timing.ci95_ms[0])}-{_g(level.timing.ci95_ms[1])}",
            _g(level.batch_ms),
            "yes" if level.on_front else "",
        ]
        for level in record.levels
    ]


def surrogate_rows(record: VersusRecord) -> list[list[str]]:
    names = [level.name for level in record.levels]
    rows = []
    for s in record.surrogates:
        ratio = s.time_match.error_ratio
        share = "" if s.interval.matched_fraction == 1 else f" ({s.interval.matched_fraction:.0%} matched)"
        rows.append(
            [
                s.label,
                _g(s.accuracy.error),
                _g(s.timing.median_ms),
                match_text(s.match),
                "-" if s.interval.low is None else f"{s.interval.low:.3g}-{s.interval.high:.3g}{share}",
                _g(ratio) if ratio is not None else TIME_STATUS.get(s.time_match.status, s.time_match.status),
                names[s.crossover_level] if s.crossover_level is not None else "none faster",
                _g(s.one_time.once_ms),
                _g(s.amortized_ms),
                str(s.batch),
                _g(s.throughput_cases_per_s),
                match_text(s.batch_match) if s.batch_match is not None else "-",
            ]
        )
    return rows


def rollout_rows(record: VersusRecord) -> list[list[str]]:
    """One row per rollout step: each surrogate's error and equal-accuracy speedup at that step."""
    if record.steps < 2:
        return []
    return [
        [
            str(k + 1),
            *(f"{_g(s.accuracy.error_vs_step[k])} / {match_text(s.step_matches[k])}" for s in record.surrogates),
        ]
        for k in range(record.steps)
    ]


def versus_tables(record: VersusRecord, width: int | None = None) -> list[Table]:
    """The terminal tables, fitted to ``width`` cells: the ladder, the surrogate settings, a rollout's steps."""
    tables = []
    for title, columns, rows in (
        (f"solver ladder: {record.problem}, {record.cases} cases, {record.device}", LEVEL_COLUMNS, level_rows(record)),
        ("surrogate vs solver (equal accuracy, equal runtime)", SURROGATE_COLUMNS, surrogate_rows(record)),
        (
            "rollout: error / speedup at each step",
            ("step", *(s.label for s in record.surrogates)),
            rollout_rows(record),
        ),
    ):
        if not rows:
            continue
        tables.append(plain_table(columns, rows, title=rich_escape(title), right=columns[1:], escape=True, width=width))
    return tables


def summary_line(record: VersusRecord) -> str:
    """One line per surrogate setting: the answer to the question."""
    lines = []
    for s in record.surrogates:
        lo, hi = s.interval.low, s.interval.high
        ci = f" (95% CI {lo:.3g}-{hi:.3g})" if lo is not None else ""
        if s.match.status == MATCHED:
            verdict = "faster" if s.match.speedup > 1 else "slower"
            lines.append(f"{s.label}: {s.match.speedup:.3g}x{ci} at equal accuracy: the surrogate is {verdict}")
        else:
            lines.append(f"{s.label}: {match_text(s.match)}: not matched on the ladder")
    return "\n".join(lines)


def versus_markdown(record: VersusRecord) -> str:
    parts = [
        f"Solver ladder ({record.problem}, {record.cases} cases, reference: {record.reference}):",
        "",
        md_table(LEVEL_COLUMNS, level_rows(record)),
        md_table(SURROGATE_COLUMNS, surrogate_rows(record)),
    ]
    if record.steps > 1:
        parts.append(md_table(("step", *(s.label for s in record.surrogates)), rollout_rows(record)))
    return "\n".join(parts)


COMPARISON_COLUMNS = ("surrogate", "BASE rel L2", "NEW rel L2", "BASE speedup", "NEW speedup", "verdict")


def versus_comparison_rows(pair) -> list[list[str]]:
    """Rows of a :class:`surrobench.records.versus.VersusComparison`: each side's error and speedup with its
    interval."""

    def speedup(value, interval) -> str:
        return "not matched" if value is None else f"{value:.3g}x ({_g(interval[0])}-{_g(interval[1])})"

    return [
        [
            r["label"],
            _g(r["base_error"]),
            _g(r["new_error"]),
            speedup(r["base_speedup"], r["base_interval"]),
            speedup(r["new_speedup"], r["new_interval"]),
            r["verdict"].replace("_", " "),
        ]
        for r in pair.rows
    ]
