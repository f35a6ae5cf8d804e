"""One self-contained HTML report (docs/design.md, "Offline and embedded by default"), all text escaped."""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping, Sequence
import html

from matplotlib.figure import Figure

from surrobench.api.report import Report, RunRoofline
from surrobench.records.findings import Finding
from surrobench.records.kernels import KERNEL_CLASSES
from surrobench.report import optimize as opt, plots, serve_tables
from surrobench.report.serve_tables import CAPACITY_COLUMNS, capacity_line, capacity_rows
from surrobench.records.serve import ServeRecord
from surrobench.report.cells import result_cells
from surrobench.report.escape import plain
from surrobench.report.findings import HEADER, evidence_check_texts, finding_row
from surrobench.version import __version__
from surrobench.report.comparison import ENV_COLUMNS, OP_DIFF_COLUMNS, UNMATCHED_COLUMNS, comparison_columns
from surrobench.report.comparison import comparison_rows, op_diff_rows, pair_label, sections, summary_line
from surrobench.records.run import WARNINGS_KEY, RunRecord, created_now, placement, scaling_rows
from surrobench.report.scaling import SCALING_COLUMNS, rank_latencies, scaling_cells
from surrobench.results.compare import RunComparison

#: Resolution of embedded figures: sharp on a laptop screen, ~50-150 kB per figure.
FIGURE_DPI = 100
_RESULT_COLUMNS = {"model": "model", "shape": "shape", "B": "batch", "precision": "precision", "mode": "mode"}
_RESULT_COLUMNS |= {"median ms": "median", "P95 ms": "p95", "device ms": "device", "samples/s": "samples_per_s"}
_RESULT_COLUMNS |= {"points/s": "points_per_s", "peak MiB": "peak_mib", "top op": "top_op", "status": "status"}
"""Column title -> :func:`result_cells` key."""
# Name cells may break anywhere so long names wrap; wide number tables shrink and scroll in narrow windows.
_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; padding: 0 1em; max-width: 1200px; color: #222; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0 1em; }
th, td { border: 1px solid #ddd; padding: 3px 6px; text-align: right; vertical-align: top; }
th { background: #f3f3f3; } td.l, th.l { text-align: left; }
td.brk, h1, h2, h3 { overflow-wrap: anywhere; } td.brk { min-width: 6em; } pre { white-space: pre-wrap; overflow-wrap: anywhere; }
div.wide { overflow-x: auto; } p.lines { white-space: pre-line; overflow-wrap: anywhere; }
@media (max-width: 900px) { table { font-size: 0.7em; } th, td { padding: 2px 3px; } }
tr.regressed td { background: #fde2e2; } tr.improved td { background: #e2f5e2; }
tr.failed td { color: #a00; } tr[class^="severity-"] td { white-space: pre-line; }
tr.severity-high td:nth-child(2) { color: #a00; font-weight: bold; } img { max-width: 100%; } .muted { color: #666; font-size: 0.9em; }
"""


def escape(text: object) -> str:
    """``text`` as HTML text or attribute value: :func:`html.escape` of :func:`~surrobench.report.escape.plain`."""
    return html.escape(plain(text))


def figure_to_data_uri(fig: Figure) -> str:
    """The figure as a ``data:image/png;base64,...`` URI (rendered by Agg at :data:`FIGURE_DPI`)."""
    buf = io.BytesIO()
    with plots.plain_text():
        fig.savefig(buf, format="png", dpi=FIGURE_DPI)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _figure(fig: Figure | None, alt: str) -> str:
    return "" if fig is None else f'<figure><img alt="{escape(alt)}" src="{figure_to_data_uri(fig)}"></figure>'


#: Words longer than this may break anywhere in their cell (class ``brk``); shorter ones never do.
_BREAK_CHARS = 24


def _td(value: object, cls: str) -> str:
    text = str(value)
    if cls and any(len(word) > _BREAK_CHARS for word in text.split()):
        cls = 'class="l brk"'
    return f"<td {cls}>{escape(text)}</td>"


def _table(header: Sequence[str], rows, left: Sequence[str] = (), row_classes: Sequence[str] | None = None) -> str:
    """An HTML table, cells escaped, ``left`` columns left-aligned; scrolls sideways when too wide."""
    cls = ['class="l"' if h in left else "" for h in header]
    head = "".join(f"<th {c}>{escape(h)}</th>" for h, c in zip(header, cls))
    body = []
    for i, row in enumerate(rows):
        tr = f'<tr class="{escape(row_classes[i])}">' if row_classes else "<tr>"
        body.append(tr + "".join(_td(v, c) for v, c in zip(row, cls)) + "</tr>")
    return f'<div class="wide"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


def _scaling(run: RunRecord) -> str:
    """A multi-rank run's scaling table and per-rank figure; empty for an ordinary run."""
    rows = scaling_rows(run.results)
    if not rows:
        return ""
    table = _table(SCALING_COLUMNS, (scaling_cells(row) for row in rows), left=("config",))
    figure = _figure(rank_latencies(run.results), "per-rank latency distributions")
    return "\n".join(
        p for p in ("<h3>Scaling: one device (rank 0 alone) vs all ranks together</h3>", table, figure) if p
    )


def _findings_html(findings: Sequence[Finding] | None, checks: Mapping[str, dict] | None = None, notes=()) -> str:
    """The diagnosis: why a verdict is held back (``checks``), its ``notes`` (the warnings it stored), findings."""
    if findings is None:
        return ""
    held = "".join(f"<p><strong>{escape(text)}</strong></p>" for text in evidence_check_texts(checks or {}))
    held += "".join(f'<p class="muted">note: {escape(note)}</p>' for note in notes)
    if not findings:  # a config that cannot be judged (timed, not profiled) said so above: not "no findings"
        judged = not any(c["verdict"] == "cannot_judge" for c in (checks or {}).values())
        return f"<h3>Diagnosis</h3>{held}" + ("<p>no findings above the report floor</p>" if judged else "")
    return f"<h3>Diagnosis</h3>{held}" + _table(
        HEADER,
        [finding_row(f) for f in findings],
        left=HEADER[:-1],
        row_classes=[f"severity-{f.severity}" for f in findings],
    )


def _run_section(
    run: RunRecord,
    findings: Sequence[Finding] | None = None,
    roof: RunRoofline | None = None,
    checks: Mapping[str, dict] | None = None,
) -> str:
    env = run.env
    columns = {**({"ranks": "ranks"} if any(placement(r) for r in run.results) else {}), **_RESULT_COLUMNS}
    columns = {t: k for t, k in columns.items() if k != "device" or any(r.device_ms for r in run.results)}
    facts = ", ".join(f"{k} {env.get(k)}" for k in ("device_name", "torch", "cuda", "cudnn", "driver") if env.get(k))
    parts = [
        f'<p class="muted">created {escape(run.created)}; tag {escape(str(run.tag or "-"))}; {escape(facts)}</p>',
        _table(
            tuple(columns),
            [[cells[key] for key in columns.values()] for cells in map(result_cells, run.results)],
            left=("ranks", "model", "shape", "mode", "top op", "status"),
            row_classes=["" if r.status == "ok" else "failed" for r in run.results],
        ),
        _scaling(run),
        _figure(plots.latency_vs_shape(run.results), "latency vs shape"),
        _figure(plots.throughput_vs_batch(run.results), "throughput vs batch"),
        _figure(plots.latency_distributions(run.results), "latency distributions"),
        _figure(
            roof and plots.roofline_figure(roof.measured, roof.estimated, roof.ceilings, "roofline: kernels and ops"),
            "roofline, measured and estimated points",
        ),
        _findings_html(findings, checks, env.get(WARNINGS_KEY, ())),
    ]
    return "\n".join(p for p in parts if p)


def _comparison_section(cmp: RunComparison, overheads: Mapping[str, float]) -> str:
    parts = [
        f"<p>BASE <code>{escape(cmp.base_run_id)}</code> → NEW <code>{escape(cmp.new_run_id)}</code>: "
        f"{escape(summary_line(cmp))}. A verdict needs the whole 95% CI of the median ratio beyond "
        f'1 ± the threshold or BASE\'s A/A noise, the larger (docs/design.md, "Faster").</p>',
        _table(
            comparison_columns(cmp),
            ([row[c] for c in comparison_columns(cmp)] for row in comparison_rows(cmp)),
            left=("ranks", "model", "shape", "mode", "top op share", "verdict"),
            row_classes=[c.verdict for c in cmp.configs],
        ),
        _figure(plots.ratio_forest(cmp), "latency ratio per config"),
    ]
    notes = [f"{pair_label(c)}: {n}" for c in cmp.configs for n in c.notes]
    if notes:
        parts.append("<ul>" + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>")
    for title, header, rows in sections(cmp):  # the notes a list above, each op diff with its overheads below
        if header in (UNMATCHED_COLUMNS, ENV_COLUMNS):
            parts += [f"<h3>{escape(title.capitalize())}</h3>", _table(header, rows, left=header)]
    for c in cmp.configs:
        if c.op_deltas:  # each side's profiler overhead: ratios of profiles that differ in it are not like for like
            sides = (("BASE", cmp.base_run_id, c.base), ("NEW", cmp.new_run_id, c.new))
            got = [(side, overheads.get(f"{run[-4:]} {r.label()}")) for side, run, r in sides]
            caveat = ", ".join(f"{side} {o:+.0%}" for side, o in got if o is not None)
            head = f"Op self time: {pair_label(c)}" + (f" (profiler overhead {caveat})" if caveat else "")
            parts += [
                f"<h3>{escape(head)}</h3>",
                _table(OP_DIFF_COLUMNS, op_diff_rows(c), left=("op",)),
            ]
    return "\n".join(parts)


def _serve_section(record: ServeRecord) -> str:
    """One serve run: its curve, unloaded latency per batch, then per policy its title, load points and search steps."""
    parts = [
        f'<p class="muted">created {escape(record.created)}; tag {escape(str(record.tag or "-"))}; '
        f"{escape(record.arrival)} arrivals, {record.duration_s:g} s per load, first {record.warmup_s:g} s "
        "left out</p>",
        _figure(plots.latency_throughput(record), "latency vs throughput"),
    ]
    for title, names, rows in serve_tables.sections(record, every=True):
        h = "h4" if names == serve_tables.SEARCH_COLUMNS else "h3"
        note = serve_tables.section_note(names)
        note = f'<p class="muted">{escape(note)}</p>' if note else ""
        parts += [f"<{h}>{escape(title)}</{h}>", _table(names, rows), note]
    best = serve_tables.best_line(record)
    parts.append(f"<p>{escape(best)}</p>" if best else "")
    parts.append("<ul>" + "".join(f"<li>{escape(n)}</li>" for n in record.notes) + "</ul>" if record.notes else "")
    return "\n".join(p for p in parts if p)


def _optimize_section(doc: dict) -> str:
    """One optimization: the speedup-vs-error plot, then per config its before/after table and recipe."""
    left = [title for title, key in opt.COLUMNS if key in ("name", "verdict", "top_op", "reason")]
    parts = [
        f'<p class="lines">{escape(opt.stored_line(doc))}</p>',  # its lines kept: the commands start their own
        _figure(plots.speedup_vs_error(doc), "speedup vs relative L2 error per candidate"),
    ]
    for entry in doc["configs"]:
        off = opt.off_line(entry)
        parts += [
            f"<h3>{escape(opt.config_title(entry))}</h3>",
            _table(
                [t for t, _ in opt.COLUMNS], ([row[k] for _, k in opt.COLUMNS] for row in opt.rows(entry)), left=left
            ),
            f"<p>{escape(off)}</p>" if off else "",
            f"<pre>{escape(chr(10).join(opt.recipe_lines(entry)))}</pre>",
        ]
    return "\n".join(p for p in parts if p)


def report_page(data: Report) -> str:
    """The whole report of ``data`` (:func:`surrobench.api.report.build_report`) as one HTML document (UTF-8);
    sections without data are left out. The first profiled step of ``data.timeline``
    (:func:`surrobench.report.plots.spans_from_timeline`) is drawn as the timeline strip."""
    sections = [(f"Optimization {doc['optimize_id']}", _optimize_section(doc)) for doc in data.optimizations]
    if data.comparison is not None:
        sections.append(("Comparison", _comparison_section(data.comparison, data.op_overheads)))
    if data.serve_comparison is not None:
        target = data.serve_comparison.capacity.target_p99_ms
        pair, left = data.serve_comparison, ("run", "id", "served", "best policy")
        capacity = f"<p>{escape(capacity_line(pair))}</p>" + _table(CAPACITY_COLUMNS, capacity_rows(pair), left=left)
        sections.append((f"Capacity at P99 <= {target:g} ms", capacity))
    for run in data.runs:
        findings, roof = (data.findings or {}).get(run.run_id), (data.rooflines or {}).get(run.run_id)
        checks = (data.evidence_checks or {}).get(run.run_id)
        sections.append((f"Run {run.run_id}", _run_section(run, findings, roof, checks)))
    sections += [(f"Serve run {record.run_id}", _serve_section(record)) for record in data.serve_runs]
    if data.op_tables:
        breakdown = plots.op_breakdown(data.op_tables, data.cpu_op_labels, data.op_overheads)
        sections.append(("Operator breakdown", _figure(breakdown, "op breakdown")))
    if shares := data.kernel_classes:  # a row per config, a column per kernel class: its share of the kernel time
        seen = sorted(
            (c for c in KERNEL_CLASSES if any(s.get(c) for s in shares.values())),
            key=lambda c: -sum(s.get(c, 0.0) for s in shares.values()),
        )
        rows = ([label] + [f"{s[c]:.1%}" if s.get(c) else "" for c in seen] for label, s in shares.items())
        sections.append(("Kernel classes", _table(["config", *seen], rows, left=["config"])))
    if data.timeline is not None and (spans := plots.spans_from_timeline(data.timeline)):
        strip = plots.timeline_strip(spans, data.timeline_title)
        sections.append(("Timeline of one profiled step", _figure(strip, "timeline strip")))
    toc = "".join(f'<li><a href="#s{i}">{escape(title)}</a></li>' for i, (title, _) in enumerate(sections))
    body = "\n".join(
        f'<section id="s{i}"><h2>{escape(title)}</h2>\n{html}</section>' for i, (title, html) in enumerate(sections)
    )
    runs = ", ".join(r.run_id for r in (*data.runs, *data.serve_runs))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>surrobench report: {escape(runs)}</title><style>{_CSS}</style></head><body>"
        f'<h1>surrobench report</h1><p class="muted">runs {escape(runs)}; generated {created_now()} by surrobench '
        f"{escape(__version__)}</p><ul>{toc}</ul>\n{body}\n</body></html>\n"
    )


def serve_page(record: ServeRecord) -> str:
    """The report page of one serve run alone (``serve --html``)."""
    return report_page(Report(runs=(), serve_runs=(record,)))
