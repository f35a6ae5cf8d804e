"""At 80 columns: a column left out is named under its table, the state of a run is never hidden, and the
optimize tables fit the terminal (issue 23, "At 80 columns"); on the CPU the CUDA-only remedies are one line."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from synthetic import config, latency_samples, optimize_doc

from surrobench.report.history import history_table
from surrobench.report.optimize import SPEEDUP_HEADER, off_device, off_line, optimize_renderables, rows
from surrobench.report.run import results_table
from surrobench.results.store import RunSummary

ALL_RESULT_COLUMNS = (
    "model",
    "shape",
    "B",
    "prec",
    "mode",
    "median ms",
    "95% CI",
    "P95 ms",
    "samples/s",
    "points/s",
    "peak MiB",
)


def _render(renderable, width: int, **print_kw) -> str:
    out = io.StringIO()
    Console(file=out, width=width, color_system=None).print(renderable, **print_kw)
    return out.getvalue()


def _headers(table) -> list[str]:
    return [c.header for c in table.columns]


def test_the_run_table_shows_the_medians_interval_within_120_columns_and_markdown_keeps_its_column():
    """The README's first run (fno2d at 64, batches 1 and 4) keeps every default column at 120 columns."""
    from surrobench.report.cells import result_cells
    from surrobench.report.run import results_markdown

    sizes = ((7.46, 1), (47.56, 4), (1234.5, 16), (0.0885, 64))  # and a sub-millisecond GPU step
    results = [config(latency_samples(ms, 0.05, n=200), batch=b) for ms, b in sizes]
    assert _headers(results_table(results[:2], title="run x", width=120)) == [*ALL_RESULT_COLUMNS, "status"]
    cis = [r.latency_ms.ci95_median for r in results]
    assert [result_cells(r)["median_ci"] for r in results] == [
        f"[{cis[0][0]:.2f}, {cis[0][1]:.2f}]",  # 7.46: to the hundredth
        f"[{cis[1][0]:.1f}, {cis[1][1]:.1f}]",
        f"[{cis[2][0]:.0f}, {cis[2][1]:.0f}]",
        f"[{cis[3][0]:.4f}, {cis[3][1]:.4f}]",  # 0.0885: not [0.09, 0.09]
    ]
    assert "| median ms | 95% CI of median |" in results_markdown(results)


@pytest.mark.parametrize("width", (80, 100))
def test_run_table_names_the_columns_it_leaves_out(width):
    results = [config(latency_samples(382.25, 0.01, n=20), size=1024, batch=16)]
    table = results_table(results, title="run x", width=width)
    shown, wide = _headers(table), _headers(results_table(results, title="run x", width=None))
    assert set(ALL_RESULT_COLUMNS) <= set(wide)
    dropped = [h for h in wide if h not in shown]
    if dropped:
        assert all(h in table.caption for h in dropped) and f"at {width} columns" in table.caption
        assert all(h in _render(table, width) for h in dropped)
    else:
        assert table.caption is None
    assert width > 80 or dropped  # 80 columns cannot hold the throughput and memory columns


def _summary(run_id: str, state: str, tag: str | None = "optimize:baseline", failed: int = 0) -> RunSummary:
    return RunSummary(
        run_id, "2026-12-01T21:45:50", tag, "NVIDIA H200", ("fno2d", "scenario:groupnorm-large"), 4, failed, state
    )


@pytest.mark.parametrize("width", (40, 60, 80, 120))
def test_history_always_shows_the_state_and_names_what_it_leaves_out(width):
    runs = [_summary("20261201-214550-2aa6", "running"), _summary("20261201-214551-2aa7", "interrupted", None, 1)]
    table = history_table(runs, "runs", width=width)
    out = _render(table, width)
    assert "running" in out and "interrupted" in out and "4 configs, 1 failed" in out
    headers = _headers(table)
    if table.show_header:  # a table, not stacked field/value lines
        assert "state" in headers
        for left_out in {"kind", "tag", "device", "models"} - set(headers):
            assert left_out in table.caption
    else:
        assert "state" in list(table.columns[0].cells)


def _cpu_doc() -> dict:
    def cand(name, verdict, reason, speedup=None):
        return {
            "name": name,
            "verdict": verdict,
            "reason": reason,
            "speedup": speedup,
            "rel_l2": 1e-7 if speedup else None,
            "setup_s": 0.1 if speedup else None,
            "break_even_calls": None,
            "median_ms": 6.0 if speedup else None,
            "baseline_ms": 8.0 if speedup else None,
            "p95_ms": 6.5 if speedup else None,
            "peak_mem_bytes": 2**24 if speedup else None,
            "top_op": None,
        }

    entry = {
        "model": "fno2d",
        "label": "fno2d 1x3x16x16 b1 fp32 eager",
        "input_shape": [1, 3, 16, 16],
        "batch": 1,
        "precision": "fp32",
        "device": "cpu",
        "mode": "eager",
        "error": None,
        "baseline": {"median_ms": 8.0, "p95_ms": 8.7, "peak_mem_bytes": 2**23, "top_op": None, "setup_s": 0.01},
        "candidates": [
            cand("cudagraph", "infeasible", "needs CUDA: CUDA graphs are a CUDA feature"),
            cand("tf32", "infeasible", "needs CUDA: TF32 is a tensor-core format of NVIDIA GPUs"),
            cand(
                "channels_last+compile-max-autotune-no-cudagraphs",
                "accepted",
                "1.33x over the baseline",
                {"median": 1.33, "ci95": [1.29, 1.37], "noise_floor": 0.03},
            ),
            cand("threads=1", "infeasible", "torch's default here is 1 thread: the baseline already runs 1"),
        ],
        "recommended": [],
        "recipe": {"code": [], "run_command": None},
        "not_tried": [],
        "notes": [],
    }
    return optimize_doc({"configs": [entry]})


def test_optimize_on_the_cpu_names_the_cuda_only_remedies_once():
    doc = _cpu_doc()
    (entry,) = doc["configs"]
    assert off_device(entry) == ["cudagraph", "tf32"]  # threads=1 is infeasible for another reason: its own row
    # markdown and HTML collapse them as the terminal does: rows of the rest, the one line
    assert [r["name"] for r in rows(entry)][1:] == ["channels_last+compile-max-autotune-no-cudagraphs", "threads=1"]
    from surrobench.report.html import _optimize_section
    from surrobench.report.optimize import optimize_markdown

    line = off_line(entry)  # the device, then the remedies of off_device
    assert line.startswith("not for cpu") and line.endswith(": cudagraph, tf32")
    for text in (optimize_markdown(doc), _optimize_section(doc)):
        assert line in text and "needs CUDA" not in text
    group, _ = optimize_renderables(doc, width=100)
    tables = [r for r in group.renderables if hasattr(r, "columns")]
    names = {cell for t in tables for cell in t.columns[0].cells}
    assert names == {"baseline", "channels_last+compile-max-autotune-no-cudagraphs", "threads=1"}
    lines = [r for r in group.renderables if isinstance(r, str)]
    assert line in lines
    assert not any(line.startswith(("cudagraph:", "tf32:")) for line in lines)  # no reason line of their own


@pytest.mark.parametrize("width", (60, 80, 92))
def test_optimize_tables_fit_the_terminal_and_name_what_they_leave_out(width):
    group, stored = optimize_renderables(_cpu_doc(), width=width)
    out = _render(group, width, crop=False)
    assert max(len(line) for line in out.splitlines()) <= width  # no recipe here: nothing verbatim to overflow
    for table in (r for r in group.renderables if hasattr(r, "columns") and r.show_header):
        wide = {"candidate", "verdict", "median ms", "baseline ms (same window)", "P95 ms", "peak MiB"}
        wide = (
            wide
            if _headers(table)[1] == "verdict"
            else {"candidate", SPEEDUP_HEADER, "rel L2", "setup s", "break-even calls"}
        )
        for left_out in wide - set(_headers(table)):
            assert left_out in table.caption


def test_a_narrow_history_leaves_out_the_tag_before_the_models():
    runs = [_summary("20261201-214550-2aa6", "running", None)]
    kept = {w: set(_headers(history_table(runs, "runs", width=w))) for w in range(90, 200, 5)}
    with_models = [w for w, headers in kept.items() if "models" in headers]
    with_tag = [w for w, headers in kept.items() if "tag" in headers]
    assert with_models and set(with_tag) <= set(with_models) and min(with_tag) > min(with_models)
