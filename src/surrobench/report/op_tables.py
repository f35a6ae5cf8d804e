"""Op tables and their readings as rich tables and markdown, from :meth:`ProfileReport.to_json`."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from surrobench.analysis.detect_ops import CPU_MEMORY
from surrobench.analysis.op_readings import CPU_SMALL_CALL_US
from surrobench.report.cells import BYTES_PER_MIB
from surrobench.report.kernel_tables import counters_renderables, kernel_table_rich, note_lines
from surrobench.report.escape import plain, rich_escape
from surrobench.report.fit import columns as fit_columns, fit_table

_COLUMNS = ("op", "category", "calls", "share", "self dev us", "total dev us", "self CPU us", "mem MiB")
_COLUMNS += ("self mem MiB", "input shapes")


def op_columns(table: dict) -> tuple[str, ...]:
    """:data:`_COLUMNS`, less the device times where the table has none (a CPU basis: they would all read 0)."""
    return _COLUMNS if table["basis"] == "device" else tuple(c for c in _COLUMNS if "dev us" not in c)


def op_rows(table: dict, top_n: int, max_shapes: int) -> list[tuple[str, ...]]:
    """The first ``top_n`` op rows as :func:`op_columns` cells, with ``max_shapes`` input shapes."""
    rows = []
    for op in table["ops"][:top_n]:
        us = (f"{op[k]:.1f}" for k in ("self_device_us", "total_device_us", "self_cpu_us"))
        mib = (f"{op[k] / BYTES_PER_MIB:.2f}" for k in ("device_mem_bytes", "self_device_mem_bytes"))
        shapes = "; ".join(op["input_shapes"][:max_shapes])
        cells = (op["name"], op["category"], str(op["calls"]), f"{op['share']:.1%}", *us, *mib, shapes)
        row = dict(zip(_COLUMNS, cells))
        rows.append(tuple(row[c] for c in op_columns(table)))
    return rows


def label(report: dict) -> str:
    """The config's ``label`` and its device: ``deeponet 64x2,1x100 b1 fp32 eager cuda``, every input named."""
    return f"{report['label']} {report['device']}"


def summary_line(report: dict) -> str:
    """Basis, total time per step, steps (the table's times sum them) and the profiler's overhead against the timed
    median (a profiled step the faster: its ratio to it), a busy host's too where other processes kept CPUs busy
    while it was timed (``busy_others``)."""
    table = report["op_table"]
    per_step_ms = table["total_us"] / table["active_steps"] / 1e3
    basis = "kernel time" if table["basis"] == "device" else "op self CPU time (no device)"
    n = table["active_steps"]
    text = f"{basis} {per_step_ms:.3f} ms/step over {n} steps (the us columns: all {n} steps together)"
    if report["overhead"] is not None:
        steps = (
            f"mean profiled step {report['profiled_step_ms']:.3f} ms vs timed median {report['unprofiled_ms']:.3f} ms"
        )
        over = report["overhead"]  # a profiled step the faster has no overhead to read: the timed calls were slower
        cause = "profiler overhead" if over >= 0 else f"profiled {over + 1:.2f}x timed, the timed calls slower"
        if (others := report.get("busy_others")) is not None:  # the gap is not the profiler's alone
            cause += f" and a busy host (other processes kept {others:.1f} CPUs busy while it was timed)"
        text += f"; {steps}: {cause}" + (f" {over:+.0%}" if over >= 0 else "")
    return text


def reading_lines(readings: dict, basis: str = "device") -> list[str]:
    """The four readings as one sentence each (shares as percentages); ``basis``: the op table's (``cpu`` or not)."""
    s, f, m, sh = readings["structure"], readings["fragmentation"], readings["memory"], readings["shapes"]
    if s["matches"] is None:
        structure = f"no expected categories for {s['model']}; leading category {s['top_category']}"
    else:
        verdict = "matches" if s["matches"] else "does NOT match"
        structure = (
            f"leading category {s['top_category']} ({s['top_category_share']:.1%}) {verdict} the "
            f"structure ({', '.join(s['expected'])} expected, together {s['expected_share']:.1%})"
        )
    parts = " + ".join(f"{c.split('/')[0]} {v:.1%}" for c, v in f["by_category"].items())
    bound = f"calls under {CPU_SMALL_CALL_US:g} us: " if basis == "cpu" else ""  # read_table's bound on a CPU
    fragments = f"{bound}{parts} = {f['share']:.1%}" + (" -- fusion targets" if f["flagged"] else "")
    if f["kernel_count"] is not None:
        fragments += f"; {f['small_kernel_count']} of {f['kernel_count']} kernels under {f['small_kernel_us']:g} us"
    if not m["available"] and basis != "device":
        memory = f"per-op memory not read: {CPU_MEMORY}"
    elif not m["available"]:
        memory = "not available (no device memory recorded per op)"
    elif not m["candidates"]:
        memory = "none"
    else:
        shares = [(c["name"], f"{c['mem_share']:.1%}", f"{c['time_share']:.1%}") for c in m["candidates"]]
        memory = ", ".join(f"{name} (memory {mem}, time {time})" for name, mem, time in shares)
    requested = ",".join("x".join(map(str, s)) for s in sh.get("inputs") or [sh["requested"]])  # profile-v3: one
    if sh["matches"] is None:
        shapes = f"requested {requested}; {sh.get('unknown_why') or 'input shapes not recorded'}"
    elif sh["matches"]:
        shapes = f"requested {requested} reached {', '.join(sh['consumers'])}"
    else:
        missed = f": {','.join('x'.join(map(str, s)) for s in sh['missing'])}" if sh.get("inputs") else " is"
        shapes = f"requested {requested}{missed} NOT among any op's inputs (reshaped or padded before the model?)"
    return [
        f"1. head vs structure: {structure}",
        f"2. fragmented small ops: {fragments}",
        f"3. memory-bound candidates: {memory}",
        f"4. shapes: {shapes}",
    ]


#: Op table columns dropped first on a narrow terminal (the highest first).
_MINOR = {"input shapes": 7, "self mem MiB": 6, "mem MiB": 5, "total dev us": 4, "self CPU us": 3, "calls": 2}
_MINOR |= {"category": 1}


def profile_renderables(reports: list[dict], top_n: int, width: int | None = None) -> list[Table | Text]:
    """What ``profile`` prints per config: its first ``top_n`` ops titled with the config and :func:`summary_line`
    (fitted to ``width``), readings, counters, trace path; or ``not profiled: ...``."""
    out: list[Table | Text] = []
    for report in reports:
        if report["status"] != "ok":  # timed, but its profiling failed: say why, as the markdown does
            out.append(Text(plain(f"not profiled: {label(report)}: {report['status']}: {report['error']}")))
            continue
        columns = fit_columns(op_columns(report["op_table"]), ("op", "category", "input shapes"), _MINOR)
        rows = [list(map(rich_escape, row)) for row in op_rows(report["op_table"], top_n, max_shapes=1)]
        out.append(fit_table(columns, rows, width, title=rich_escape(f"{label(report)}\n{summary_line(report)}")))
        out += [Text(plain(line)) for line in reading_lines(report["readings"], report["op_table"]["basis"])]
        kernels = report.get("kernel_table")  # GPU runs (profile-v2 and later)
        if kernels and kernels["kernels"]:
            out.append(kernel_table_rich(kernels, width=width))
            out += [Text(plain(f"attribution: {line}")) for line in note_lines(kernels)]
        if report.get("counters"):  # --counters (profile-v2 and later)
            out += counters_renderables({label(report): report["counters"]}, width)
        if report["trace_path"]:
            out.append(Text(plain(f"trace: {report['trace_path']}")))
    return out
