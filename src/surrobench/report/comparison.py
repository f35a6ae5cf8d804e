"""The before/after table of a :class:`RunComparison`, cells formatted once by :func:`comparison_rows`."""

from __future__ import annotations

from collections import Counter

from rich.table import Table

from surrobench.api.compare import ComparedRuns, ComparedServeRuns
from surrobench.report.cells import BYTES_PER_MIB, fmt
from surrobench.report.escape import md_escape, md_table, rich_escape
from surrobench.report.fit import columns as fit_columns, fit_table, plain_table
from surrobench.records.config import mode_text
from surrobench.records.run import RunRecord, placement, scaling_rows
from surrobench.report.scaling import scaling_markdown, scaling_table
from surrobench.report.serve_tables import capacity_markdown, capacity_table
from surrobench.results.compare import ConfigComparison, RatioCI, RunComparison

#: Operators listed per config in the op-level diff (the rest move the total less).
OP_DIFF_ROWS = 8
COLUMNS = ("model", "shape", "B", "precision", "mode", "median ms", "median ratio [95% CI]", "P95 ms")
COLUMNS += ("P95 ratio [95% CI]", "peak MiB", "top op share", "A/A noise", "verdict")
UNMATCHED_COLUMNS = ("run", "model", "shape", "B", "precision", "device", "mode")
OP_DIFF_COLUMNS = ("op", "BASE ms", "NEW ms", "change")
ENV_COLUMNS = ("key", "BASE", "NEW")
_VERDICT_STYLE = {"improved": "green", "regressed": "bold red", "inconclusive": "yellow", "not_compared": "yellow"}


def comparison_columns(cmp: RunComparison) -> tuple[str, ...]:
    """:data:`COLUMNS`, led by ``ranks`` when a matched config comes from a multi-rank run."""
    return (("ranks",) if any(placement(c.base) for c in cmp.configs) else ()) + COLUMNS


def pair_label(c: ConfigComparison) -> str:
    """:meth:`ConfigResult.label` of BASE, with NEW's precision and mode where a comparison ignored them."""
    b, n = c.base, c.new
    mode = _field(mode_text(b.mode, b.extra), mode_text(n.mode, n.extra))
    return f"{b.model} {b.shape_text()} b{b.batch} {_field(b.precision, n.precision)} {mode}"


def _pair(base: float | None, new: float | None, spec: str) -> str:
    return f"{fmt(base, spec)} → {fmt(new, spec)}"


def _ratio_ci(r: RatioCI | None) -> str:
    return "-" if r is None else f"{r.ratio:.3f} [{r.ci95[0]:.3f}, {r.ci95[1]:.3f}]"


def _top_op(c: ConfigComparison) -> str:
    b, n = c.base.top_op, c.new.top_op
    if not b and not n:
        return "-"
    if b and n and b["name"] == n["name"]:
        return f"{b['name']} {b['share']:.0%} → {n['share']:.0%}"
    return " → ".join(f"{t['name']} {t['share']:.0%}" if t else "-" for t in (b, n))


def _field(base: str, new: str) -> str:
    return base if base == new else f"{base} → {new}"


def comparison_rows(cmp: RunComparison) -> list[dict[str, str]]:
    """One dict per matched config, keys :func:`comparison_columns`, values formatted plain text (not escaped); the
    verdict ``regressed (busy host)`` where :attr:`ConfigComparison.contended`."""
    rows = []
    for c in cmp.configs:
        b, n = c.base, c.new
        median = _pair(b.latency_ms and b.latency_ms.median, n.latency_ms and n.latency_ms.median, ".3f")
        p95 = _pair(b.latency_ms and b.latency_ms.p95, n.latency_ms and n.latency_ms.p95, ".3f")
        if not c.p95_trustworthy and c.p95_ratio is not None:
            p95 += " (few samples)"
        peak = _pair(*(r.peak_mem_bytes and r.peak_mem_bytes / BYTES_PER_MIB for r in (b, n)), ".1f")
        if c.peak_mem_ratio is not None:
            peak += f" ({c.peak_mem_ratio:.2f}x)"
        where = placement(b)
        rows.append(
            {
                "ranks": where.label() if where is not None else "-",
                "model": b.model,
                "shape": b.shape_text(),
                "B": str(b.batch),
                "precision": _field(b.precision, n.precision),
                "mode": _field(mode_text(b.mode, b.extra), mode_text(n.mode, n.extra)),
                "median ms": median,
                "median ratio [95% CI]": _ratio_ci(c.median_ratio),
                "P95 ms": p95,
                "P95 ratio [95% CI]": _ratio_ci(c.p95_ratio),
                "peak MiB": peak,
                "top op share": _top_op(c),
                "A/A noise": "-" if c.speedup is None else f"{c.speedup.noise_floor:.1%}",
                "verdict": f"{c.verdict} (busy host)" if c.contended else c.verdict,
            }
        )
    return rows


def summary_line(cmp: RunComparison) -> str:
    """``2 regressed (1 on a busy host), 1 improved, 5 unchanged (threshold ±2.0% or BASE's A/A noise, the larger)``
    (:attr:`ConfigComparison.contended`), then each model spelled two ways (:attr:`RunComparison.respelled`)."""
    said = {v: f"{n} {v.replace('_', ' ')}" for v, n in cmp.verdict_counts.items() if n}
    for v, n in Counter(c.verdict for c in cmp.configs if c.contended).items():
        said[v] += f" ({n} on a busy host)"
    counts = ", ".join(said.values())
    line = f"{counts or 'no matched configs'} (threshold ±{cmp.threshold:.1%} or BASE's A/A noise, the larger)"
    return line + "".join(
        f"; BASE's {b!r} and NEW's {n!r} name files of one name spelled differently: configs match by the name as "
        "typed (if they are one file, run both from one folder with one spelling)"
        for b, n in cmp.respelled
    )


def op_diff_rows(c: ConfigComparison) -> list[tuple[str, str, str, str]]:
    """(op, base ms, new ms, change) for the :data:`OP_DIFF_ROWS` ops whose self time moved most."""
    return [
        (d.name, fmt(d.base_ms), fmt(d.new_ms), f"{d.delta_ms:+.3f} ms" + (f" ({d.ratio:.2f}x)" if d.ratio else ""))
        for d in c.op_deltas[:OP_DIFF_ROWS]
    ]


#: Terminal columns dropped first on a narrow terminal (highest first; :func:`~surrobench.report.fit.fit_table`).
_MINOR = {"A/A noise": 5, "top op share": 4, "peak MiB": 3, "P95 ratio [95% CI]": 2, "P95 ms": 1}


def comparison_tables(cmp: RunComparison, width: int | None = None) -> list[Table]:
    """Rich tables fitted to ``width``: before/after, notes, unmatched configs, environment and op diffs."""
    columns = comparison_columns(cmp)
    rows = []
    for c, row in zip(cmp.configs, comparison_rows(cmp)):
        style = _VERDICT_STYLE.get(c.verdict)
        cells = [rich_escape(row[col]) for col in columns]
        cells[-1] = f"[{style}]{cells[-1]}[/{style}]" if style else cells[-1]
        rows.append(cells)
    cols = fit_columns(
        columns, ("ranks", "model", "shape", "mode", "top op share"), _MINOR, wrap=("model", "top op share")
    )
    title = f"compare BASE {rich_escape(cmp.base_run_id)} → NEW {rich_escape(cmp.new_run_id)}"
    tables = [fit_table(cols, rows, width, title=title, caption=rich_escape(summary_line(cmp)))]
    for title, header, rows in sections(cmp):
        right = header[1:] if header == OP_DIFF_COLUMNS else ()
        tables.append(plain_table(header, rows, title=rich_escape(title), right=right, escape=True, width=width))
    return tables


def sections(cmp: RunComparison) -> list[tuple[str, tuple[str, ...], list[tuple[str, ...]]]]:
    """The tables under the comparison, each ``(title, header, rows)`` where it has a row: the notes, the configs in
    one run only, the environment differences and per config its op diff (:func:`op_diff_rows`)."""
    out = [("notes", ("config", "note"), [(pair_label(c), note) for c in cmp.configs for note in c.notes])]
    unmatched = [
        (side, r.model, r.shape_text(), str(r.batch), r.precision, r.device, r.mode)
        for side, results in (("BASE", cmp.only_base), ("NEW", cmp.only_new))
        for r in results
    ]
    out.append(("configs in one run only", UNMATCHED_COLUMNS, unmatched))
    out.append(("environment differences", ENV_COLUMNS, [(d.key, d.base, d.new) for d in cmp.env_diff]))
    out += [(f"op self time: {pair_label(c)}", OP_DIFF_COLUMNS, op_diff_rows(c)) for c in cmp.configs]
    return [section for section in out if section[2]]


def comparison_markdown(cmp: RunComparison) -> str:
    """The comparison as GitHub-flavoured Markdown (tables, notes, unmatched configs, env, op diffs)."""
    lines = [f"## compare BASE `{cmp.base_run_id}` → NEW `{cmp.new_run_id}`", "", summary_line(cmp), ""]
    columns = comparison_columns(cmp)
    lines.append(md_table(columns, ([row[c] for c in columns] for row in comparison_rows(cmp))))
    for title, header, rows in sections(cmp):
        lines += [f"### {md_escape(title, newline=' ')}", "", md_table(header, rows)]
    return "\n".join(lines)


def _scaling_sides(base: RunRecord, new: RunRecord) -> list[tuple[str, list]]:
    """The scaling rows of each multi-process side, titled ``scaling of BASE <run id>`` / ``NEW``."""
    sides = (
        (f"scaling of {side} {run.run_id}", scaling_rows(run.results)) for side, run in (("BASE", base), ("NEW", new))
    )
    return [(title, rows) for title, rows in sides if rows]


def comparison_renderables(pair: ComparedRuns | ComparedServeRuns, width: int | None = None) -> list[Table]:
    """What ``compare`` prints: the tables, multi-process scaling tables, or a serve capacity table."""
    if isinstance(pair, ComparedServeRuns):
        return [capacity_table(pair, width)]
    if not isinstance(pair, ComparedRuns):  # two versus records
        from surrobench.report.versus_tables import COMPARISON_COLUMNS, versus_comparison_rows

        title = "versus: speedup at equal accuracy, BASE vs NEW (95% intervals over cases)"
        rows = versus_comparison_rows(pair)
        return [plain_table(COMPARISON_COLUMNS, rows, title=title, right=COMPARISON_COLUMNS[1:], escape=True)]
    scaling = [scaling_table(rows, title=rich_escape(title)) for title, rows in _scaling_sides(pair.base, pair.new)]
    return comparison_tables(pair.comparison, width=width) + scaling


def comparison_document(pair: ComparedRuns | ComparedServeRuns) -> str:
    """:func:`comparison_markdown` with the scaling tables or the serve capacity table."""
    if isinstance(pair, ComparedServeRuns):
        return capacity_markdown(pair)
    if not isinstance(pair, ComparedRuns):
        from surrobench.report.versus_tables import COMPARISON_COLUMNS, versus_comparison_rows

        return md_table(COMPARISON_COLUMNS, versus_comparison_rows(pair))
    sides = _scaling_sides(pair.base, pair.new)
    tables = "".join(f"\n### {md_escape(t)}\n\n{scaling_markdown(rows)}" for t, rows in sides)
    return comparison_markdown(pair.comparison) + tables
