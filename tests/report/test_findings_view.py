"""The diagnosis in the terminal: a compact view by default (a line or two per finding: severity, kind,
where, gain, action), the evidence behind --explain, words never broken (docs/design.md, "Findings")."""

from __future__ import annotations

import textwrap

import io
from pathlib import Path

import pytest
from rich.console import Console

from surrobench.api.diagnose import diagnose
from surrobench.records.findings import Evidence, Finding
from surrobench.report.findings import (
    BRIEF_ACTION_LINES,
    BRIEF_HINT,
    UNKNOWN_GAIN,
    brief_cells,
    findings_brief,
    findings_explained,
    findings_renderables,
    findings_section_markdown,
    quiet_configs,
)

UNET = Path(__file__).resolve().parents[1] / "fixtures" / "traces" / "unet_256_b1_fp32_h200.json.gz"
LONG_ACTION = (
    "normalization (aten::native_group_norm): a reduction per (batch x group) row then an elementwise pass: at a "
    "small batch too few rows to keep the processors busy: raise the batch; fuse the norm with its activation "
    "(torch.compile); keep NCHW for GroupNorm (channels_last measured slower on the H200)"
)


def _findings() -> list[Finding]:
    return [
        Finding(
            "memory_bound",
            "high",
            "3.802 ms per step in memory-bound ops (aten::native_group_norm)",
            (
                Evidence("profiler", "aten::native_group_norm: 57% of op time, 3.802 ms per step"),
                Evidence("roofline", "0.87 FLOP/byte < ridge 12.6, 128 GB/s = 3% of 4021 GB/s"),
                Evidence("timeline", "GPU busy 95% of the profiled window"),
            ),
            LONG_ACTION,
            3.681,
            config="unet2d 1x3x512x512 b1 fp32 eager",
        ),
        Finding(
            "compute_bound",
            "info",
            "compute-bound ops at 60% of the fp32 matmul peak",
            (Evidence("roofline", "aten::convolution 117 FLOP/byte >= ridge 12.6, 30.5 TFLOP/s"),),
            "healthy near the peak; to go faster lower the precision (tf32, bf16) or the FLOPs",
            None,
            config="unet2d 1x3x512x512 b1 fp32 eager",
        ),
    ]


def _render(renderables, width: int) -> str:
    out = io.StringIO()
    console = Console(file=out, width=width, color_system=None)
    for r in renderables:
        console.print(r)
    return out.getvalue()


def _words(findings: list[Finding], extra: str) -> set[str]:
    """Every whitespace-separated word the findings (and ``extra``) hold, as the renderers may print it."""
    texts = (
        [extra]
        + [v for f in findings for v in brief_cells(f).values()]
        + [e.text for f in findings for e in f.evidence]
    )
    texts += [e.source for f in findings for e in f.evidence] + ["summary", "action", "remedies", "→"]
    texts += [", ".join(f.remedies) for f in findings]
    return {w for t in texts for w in t.split()}


def _unbroken(out: str, findings: list[Finding], extra: str = "") -> None:
    """No word of the output is a piece of a word: each is whole, or cut at its end with an ellipsis."""
    known = _words(findings, extra)
    for word in out.split():
        if word.endswith("…") or word == "…" or word.rstrip(".").isdigit():  # cut at the end; "1." numbering
            continue
        assert word in known, word


@pytest.mark.parametrize("width", (80, 100, 160))
def test_compact_view_prints_the_brief_fields_of_each_finding_and_no_evidence(width):
    findings = _findings()
    out = _render([findings_brief(findings, width)], width)
    lines = out.rstrip("\n").split("\n")
    assert max(len(line) for line in lines) <= width
    # a header, the summary below it where too little room is left beside it (a fresh-user trial saw it cut to a
    # few words at 80 columns), the action on at most BRIEF_ACTION_LINES
    assert len(lines) <= len(findings) * (2 + BRIEF_ACTION_LINES)
    flat = " ".join(out.split())
    assert all(textwrap.shorten(f.summary, 40, placeholder="") in flat for f in findings)  # 40 cells of each
    starts = [i for i, line in enumerate(lines) if not line.startswith(" ")]
    assert len(starts) == len(findings)  # one header line per finding, in the order given
    for start, f in zip(starts, findings):
        c = brief_cells(f)
        assert lines[start].split()[:2] == [f.severity, f.kind]
        assert c["gain"] in lines[start] and c["where"] in " ".join(lines[start : start + 2])
    assert "est. 3.681 ms/step" in out and UNKNOWN_GAIN in out  # an estimate is labelled one
    assert LONG_ACTION.split(":")[0] in out and "healthy near the peak" in out
    assert not any(e.text in out for f in findings for e in f.evidence)
    _unbroken(out, findings)


def test_explain_prints_every_piece_of_evidence_and_the_whole_action():
    findings = _findings()
    out = _render([findings_explained(findings)], 100)
    flat = " ".join(out.split())
    for f in findings:
        assert all(" ".join(e.text.split()) in flat for e in f.evidence)
        assert " ".join(f.action.split()) in flat and f.summary in flat and f.config in flat
    assert "…" not in out
    _unbroken(out, findings)


def test_a_real_trace_reads_on_one_screen_and_explains_in_full():
    findings = list(diagnose(trace=UNET).findings)
    assert findings
    renderables = findings_renderables(findings, "diagnosis of a trace", width=100)
    out = _render(renderables, 100)
    assert str(renderables[-1]) == BRIEF_HINT and out.startswith(f"diagnosis of a trace: {len(findings)} finding")
    assert len(out.splitlines()) <= 2 + len(findings) * (1 + BRIEF_ACTION_LINES)
    assert all(f.kind in out and brief_cells(f)["gain"] in out for f in findings)
    _unbroken(out, findings, f"diagnosis of a trace: {len(findings)} findings {BRIEF_HINT}")
    explained = _render(findings_renderables(findings, "t", width=100, explain=True), 100)
    assert all(" ".join(e.text.split()) in " ".join(explained.split()) for f in findings for e in f.evidence)
    _unbroken(explained, findings, f"t: {len(findings)} findings")
    launch = next(f for f in findings if f.kind == "launch_bound")  # the remedies its action suggests, by id
    assert launch.remedies == ("cudagraph", "compile-reduce-overhead")
    assert "remedies  " + ", ".join(launch.remedies) in explained


def test_a_word_wider_than_the_terminal_is_cut_at_its_end_never_broken():
    token = "torch.compile(mode='reduce-overhead',fullgraph=True)"
    findings = [Finding("launch_bound", "high", "idle", (Evidence("timeline", token),), f"use {token} here", 1.0)]
    for out in (_render([findings_brief(findings, 40)], 40), _render([findings_explained(findings)], 40)):
        assert max(len(line) for line in out.splitlines()) <= 40
        assert any(w.endswith("…") and token.startswith(w[:-1]) for w in out.split())
        _unbroken(out, findings)


def test_every_config_diagnosed_gets_a_line_a_config_without_a_finding_too():
    """fno2d 64 at batch 1 and 4: a finding for batch 1 only; batch 4 (no finding) and a failed config."""
    b1, b4, b8 = ("fno2d 1x3x64x64 b1 fp32 eager", "fno2d 4x3x64x64 b4 fp32 eager", "fno2d 8x3x64x64 b8 fp32 eager")
    found = [Finding("launch_bound", "high", "idle GPU", (), "CUDA graph", 1.0, config=b1)]
    failed = [{"label": b8, "status": "oom", "error": "OutOfMemoryError", "cause": None}]
    quiet = quiet_configs(found, [b1, b4, b4, b8], failed)
    assert quiet == [b4]  # once each; b1 has its finding, b8 its failure line
    for explain in (False, True):
        out = _render(findings_renderables(found, "diagnosis", 200, explain=explain, quiet=quiet), 200)
        assert b4 in out
    assert b4 in findings_section_markdown(found, "diagnosis", failed, quiet)


def test_an_unknown_gain_reads_the_same_in_the_terminal_the_table_and_the_json():
    """A fresh-user trial (CPU, no calibration, ``--measure-s 0``): no finding had a number, and the terminal read
    "gain ?", the markdown "-", the JSON an estimate of null ms; each view now says UNKNOWN_GAIN, an estimate's
    words, a code change left beside a remedy measured slower too."""
    from dataclasses import replace

    from surrobench.records.findings import MeasuredRemedy
    from surrobench.report.findings import finding_row

    unknown = _findings()[1]
    assert (unknown.gain["kind"], unknown.gain["ms"]) == ("estimate", None)
    assert brief_cells(unknown)["gain"] == finding_row(unknown)[-1] == UNKNOWN_GAIN
    slower = MeasuredRemedy("compile", "slower", 0.86, (0.83, 0.89), 35.1, -5.7)
    kept = replace(_findings()[0], measured=(slower,), severity_estimated=True, estimated_gain_ms=None)
    assert (kept.gain["kind"], kept.gain["ms"]) == ("estimate", None)
    assert (
        brief_cells(kept)["gain"].endswith(f", {UNKNOWN_GAIN}") and finding_row(kept)[-1] == brief_cells(kept)["gain"]
    )


def test_a_gain_no_measurement_gives_is_an_estimate_beside_a_remedy_measured_slower():
    """A fresh-user trial's SNO diagnose: channels_last measured slower, threads=2 not measured; its JSON read
    ``"gain": {"kind": "measured", "ms": null}`` beside the terminal's UNKNOWN_GAIN (docs/diagnose.md: an unknown
    gain is an estimate of null ms). The kind is that of the number :attr:`Finding.gain_ms` gives, in every view."""
    from surrobench.records.findings import Clause, MeasuredRemedy
    from surrobench.report.findings import finding_row
    from surrobench.results.measured_remedies import attach_measured

    label = "sno 1x3x64x128 b1 fp32 eager"
    clauses = (Clause("keep one layout: channels_last", ("channels_last",)), Clause("two threads", ("threads",)))
    norm = Finding("memory_bound", "low", "norm then GELU", (), clauses, config=label)
    slower = MeasuredRemedy("channels_last", "slower", 0.83, (0.79, 0.92), 40.0, -8.2, noise_floor=0.02, margin=0.02)
    left = MeasuredRemedy("threads=2", "not-measured", reason="budget spent")
    (found,) = attach_measured([norm], {label: (slower, left)})
    assert found.measured == (slower, left) and not found.none_faster and found.best_measured is None
    assert (found.gain["kind"], found.gain["ms"]) == ("estimate", None) == (found.gain_kind, found.gain_ms)
    assert brief_cells(found)["gain"] == finding_row(found)[-1] == UNKNOWN_GAIN


def test_the_brief_gain_names_the_measured_remedy_and_never_reads_a_slower_one_as_a_saving():
    from dataclasses import replace

    from surrobench.records.findings import MeasuredRemedy
    from surrobench.report.findings import finding_row

    base = _findings()[0]
    slower = MeasuredRemedy("compile", "slower", 0.86, (0.83, 0.89), 35.1, -5.7)
    faster = MeasuredRemedy("cudagraph", "faster", 1.5, (1.4, 1.6), 3.0, 1.0)
    none = "no remedy it names measured faster"
    assert brief_cells(replace(base, measured=(slower,), severity="low"))["gain"] == none
    assert brief_cells(replace(base, measured=(slower,)))["gain"] == none  # nothing left: low, 0 ms measured
    kept = replace(base, measured=(slower,), severity_estimated=True, estimated_gain_ms=2.5)
    assert brief_cells(kept)["gain"] == none + ", severity est. from its ops' time, est. 2.500 ms/step"
    assert brief_cells(replace(kept, severity="info"))["gain"] == none  # no alarm: its severity is not at stake
    for planted in (kept, replace(base, measured=(slower,))):  # the table says what the terminal says
        assert finding_row(planted)[-1] == brief_cells(planted)["gain"]
    assert brief_cells(replace(base, measured=(slower, faster)))["gain"] == "saves 1.000 ms/step measured (cudagraph)"
    # a saving beyond the finding's ops (10% of the op time) and of a drifted window says both, in both views
    from surrobench.records.findings import OP_SHARE

    narrow = replace(base, evidence=(Evidence("profiler", "aten::tanh: 10% of op time", 0.1, OP_SHARE),))
    drifted = replace(faster, drifted=True)
    assert narrow.whole_step is False and replace(narrow, measured=(faster,)).whole_step  # 33% of the step saved
    both = replace(narrow, measured=(drifted,))
    assert (
        brief_cells(both)["gain"]
        == "saves 1.000 ms/step measured, whole step, its window drifted: 3 ms baseline (cudagraph)"
    )
    assert finding_row(both)[-1] == "1.000 (measured, whole step, its window drifted: 3 ms baseline)"


def test_no_remedy_measured_faster_reads_the_same_in_the_terminal_and_the_table():
    """A fresh-user trial (CPU, compile measured inconclusive 1.39x [0.88, 2.08]): the terminal read "no remedy it
    names measured faster", the markdown cell "0.000 (measured)", a measured gain of nothing; the JSON keeps
    ``{"kind": "measured", "ms": 0.0}`` (the ranking reads it), the terminal and the table say the same."""
    from dataclasses import replace

    from surrobench.records.findings import MeasuredRemedy
    from surrobench.report.findings import finding_row, findings_markdown

    inconclusive = MeasuredRemedy("compile", "inconclusive", 1.39, (0.88, 2.08), 19.651, 5.5)
    planted = replace(_findings()[0], severity="low", measured=(inconclusive,))
    assert planted.none_faster and planted.best_measured is None
    assert (planted.gain["kind"], planted.gain["ms"]) == ("measured", 0.0)
    cell = brief_cells(planted)["gain"]
    assert finding_row(planted)[-1] == cell and not cell[0].isdigit()
    row = findings_markdown([planted]).splitlines()[2]
    assert row.rstrip(" |").endswith(cell)


def test_a_none_faster_gain_left_an_estimate_says_so_in_the_json_as_the_text_reads_it():
    """A fresh-user trial's CPU compute_bound (info; its action's code change kept its severity, estimated): the
    terminal and the markdown read "no remedy it names measured faster" while ``--json`` had only ``{"kind":
    "estimate", "ms": null}``. The JSON's gain carries ``none_faster``; the text reads it; an old document reads."""
    from dataclasses import replace

    from surrobench.records.findings import Diagnosis, MeasuredRemedy
    from surrobench.report.findings import finding_row

    measured = (
        MeasuredRemedy("threads=1", "infeasible", reason="already part of the baseline config"),
        MeasuredRemedy("threads=2", "slower", 0.8, (0.75, 0.85), 30.0, -7.5),
        MeasuredRemedy("bf16", "inconclusive", 1.1, (0.9, 1.3), 30.0, 2.7),
    )
    planted = replace(_findings()[1], measured=measured, severity_estimated=True)
    gain = Diagnosis({}, (planted,)).to_json()["findings"][0]["gain"]
    assert (gain["kind"], gain["ms"], gain["none_faster"]) == ("estimate", None, True)
    assert brief_cells(planted)["gain"] == finding_row(planted)[-1] == "no remedy it names measured faster"
    assert _findings()[1].gain["none_faster"] is False
    old = Diagnosis({}, (planted,)).to_json() | {"schema": "surrobench/diagnosis-v7"}
    del old["findings"][0]["gain"]["none_faster"]
    assert Diagnosis.from_json(old).findings[0].gain["none_faster"] is True  # derived from its measured again
