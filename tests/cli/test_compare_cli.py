"""``surrobench compare`` and ``surrobench history``: exit codes, outputs, run references."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli
from synthetic import config, latency_samples, run

from surrobench.results.compare import MIN_GATE_ROUNDS
from surrobench.results.store import ResultStore
from surrobench.results.profiles import add_op_table


def _write(path, record):
    path.write_text(json.dumps(record.to_json()))
    return str(path)


@pytest.fixture
def runs(tmp_path):
    """BASE, NEW with one config 20% slower, and a copy of BASE on another device, as JSON files."""
    fast, slow = latency_samples(1.0, 0.01, seed=1), latency_samples(1.2, 0.01, seed=2)
    rounds = {"rounds": 4}  # a gating comparison needs runs of four rounds or more
    base = run("base-1", [config(fast, size=64, extra=rounds), config(fast, size=128, extra=rounds)], env=rounds)
    new = run("new-1", [config(fast, size=64, extra=rounds), config(slow, size=128, extra=rounds)], env=rounds)
    other = run("other-1", base.results, device_name="Other GPU")
    return {name: _write(tmp_path / f"{name}.json", r) for name, r in (("base", base), ("new", new), ("other", other))}


def test_compare_writes_json_and_markdown_and_gates(runs, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    out, md = tmp_path / "c.json", tmp_path / "c.md"
    assert run_cli(["compare", runs["base"], runs["new"], "--json", str(out), "--markdown", str(md)]) == 0
    stdout = capsys.readouterr().out
    assert "regressed" in stdout and "unchanged" in stdout
    data = json.loads(out.read_text())
    assert [c["verdict"] for c in data["configs"]] == ["unchanged", "regressed"]
    text = md.read_text()
    assert text.count("| fno2d |") == 2 and "1 regressed, 1 unchanged" in text
    assert run_cli(["compare", runs["base"], runs["new"], "--fail-on-regression"]) == 1
    assert run_cli(["compare", runs["base"], runs["base"], "--fail-on-regression"]) == 0
    # With a 25% threshold a 20% slowdown is not practically relevant.
    assert run_cli(["compare", runs["base"], runs["new"], "--fail-on-regression", "--threshold", "0.25"]) == 0


@pytest.mark.parametrize(
    "args, message",
    [
        (["compare", "{base}", "{other}"], "--allow-env-mismatch"),
        (["compare", "{base}", "{missing}"], "cannot read"),
        (["compare", "{base}", "{not_a_run}"], "not a surrobench run"),
        (["compare", "{base}", "no-such-run", "--db", "{db}"], "no run"),
        (["compare", "{base}", "some-id", "--db", "{nodb}"], "no results database"),
        (["compare", "{base}", "{base}", "--threshold", "2"], "--threshold"),
        (["history", "--db", "{db}", "--since", "yesterday"], "--since"),
    ],
)
def test_usage_errors_exit_2_with_one_line(runs, tmp_path, capsys, args, message):
    db = tmp_path / "r.db"
    ResultStore(db).close()
    (tmp_path / "bad.json").write_text(json.dumps({"schema": "something-else"}))
    paths = {
        **runs,
        "missing": str(tmp_path / "missing.json"),
        "not_a_run": str(tmp_path / "bad.json"),
        "db": str(db),
        "nodb": str(tmp_path / "nope.db"),
    }
    assert run_cli([a.format(**paths) for a in args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("surrobench: error:") and message in err and "\n" not in err


def test_allow_env_mismatch_lists_the_difference(runs, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    assert run_cli(["compare", runs["base"], runs["other"], "--allow-env-mismatch"]) == 0
    out = capsys.readouterr().out
    assert "environment differences" in out and "Other GPU" in out


def test_compare_and_history_from_the_database(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    db = tmp_path / "r.db"
    s = latency_samples(1.0, 0.01)
    with ResultStore(db) as store:
        for rec in (
            run("20261130-120000-aaaa", [config(s)], tag="before", created="2026-11-29T12:00:00+00:00"),
            run("20261130-130000-bbbb", [config(s, model="unet")], tag="after"),
        ):
            store.begin_run(rec)
            for r in rec.results:
                store.add_result(rec.run_id, r)
    assert run_cli(["compare", "20261130-12", "20261130-12", "--db", str(db)]) == 0

    out = tmp_path / "h.json"
    assert run_cli(["history", "--db", str(db), "--json", str(out)]) == 0
    assert [r["run_id"] for r in json.loads(out.read_text())["runs"]] == [
        "20261130-130000-bbbb",
        "20261130-120000-aaaa",
    ]
    assert "20261130-120000-aaaa" in capsys.readouterr().out
    for args, expected in (
        (["--model", "fno2d"], ["20261130-120000-aaaa"]),
        (["--tag", "after"], ["20261130-130000-bbbb"]),
        (["--since", "2026-11-30"], ["20261130-130000-bbbb"]),
    ):
        assert run_cli(["history", "--db", str(db), "--json", str(out), *args]) == 0
        assert [r["run_id"] for r in json.loads(out.read_text())["runs"]] == expected


def test_ignore_field_mode_compares_eager_with_cudagraph(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    eager = _write(tmp_path / "e.json", run("e", [config(latency_samples(1.0, 0.01), mode="eager")]))
    graph = _write(tmp_path / "g.json", run("g", [config(latency_samples(0.4, 0.01, seed=4), mode="cudagraph")]))
    md = tmp_path / "c.md"
    assert run_cli(["compare", eager, graph, "--ignore-field", "mode", "--markdown", str(md)]) == 0
    assert "| eager → cudagraph |" in md.read_text() and "improved" in capsys.readouterr().out
    assert run_cli(["compare", eager, graph, "--ignore-field", "model"]) == 2


def test_op_tables_in_the_database_feed_the_op_diff_and_the_report(tmp_path):
    from surrobench.records.ops import OpStat, OpTable

    def table(fft_us):  # 2 active steps: per-step self times are half the sums
        ops = (
            OpStat("aten::_fft_r2c", "fft", 2, fft_us, fft_us, 0.8, 10.0),
            OpStat("aten::mul", "elementwise", 2, 100.0, 100.0, 0.2, 5.0),
        )
        return OpTable(ops=ops, basis="device", total_us=fft_us + 100.0, active_steps=2, source="profiler")

    db = tmp_path / "r.db"
    s = latency_samples(1.0, 0.01)
    with ResultStore(db) as store:
        for run_id, fft_us in (("20261130-120000-aaaa", 400.0), ("20261130-130000-bbbb", 200.0)):
            store.begin_run(run(run_id, []))
            add_op_table(store, store.add_result(run_id, config(s)), table(fft_us))
    out, html = tmp_path / "c.json", tmp_path / "r.html"
    assert run_cli(["compare", "20261130-12", "20261130-13", "--db", str(db), "--json", str(out)]) == 0
    deltas = json.loads(out.read_text())["configs"][0]["op_deltas"]
    assert deltas[0] == {"name": "aten::_fft_r2c", "base_ms": 0.2, "new_ms": 0.1, "delta_ms": -0.1, "ratio": 0.5}
    assert run_cli(["report", "20261130-12", "20261130-13", "--db", str(db), "-o", str(html)]) == 0
    page = html.read_text()
    assert "<h2>Operator breakdown" in page and "Op self time:" in page


def test_the_gate_rounds_in_help_and_docs_are_the_ones_the_check_reads(capsys, monkeypatch):
    """A fresh-user trial's --help said 2 rounds where the gate refuses fewer than MIN_GATE_ROUNDS (4)."""
    from pathlib import Path

    monkeypatch.setenv("COLUMNS", "400")
    assert run_cli(["compare", "--help"]) == 0
    assert f"--rounds {MIN_GATE_ROUNDS} or more" in " ".join(capsys.readouterr().out.split())
    cli_md = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
    assert f"`--fail-on-regression` with a run of fewer than {MIN_GATE_ROUNDS} rounds" in cli_md.read_text()


def test_gate_needs_rounds_and_a_config_in_common(runs, tmp_path, capsys):
    """A single-round A/A pair can 'regress' on a shared host; a gate that compared nothing must not pass."""
    single = _write(tmp_path / "single.json", run("single-1", [config(latency_samples(1.0, 0.01))]))
    assert run_cli(["compare", single, single, "--fail-on-regression"]) == 2
    err = capsys.readouterr().err
    assert "--fail-on-regression" in err and f"--rounds {MIN_GATE_ROUNDS}" in err  # the gate, the rounds it needs
    assert run_cli(["compare", single, single]) == 0  # without the gate: compared, and notes say it
    capsys.readouterr()
    rounds = {"rounds": 4}
    elsewhere = _write(
        tmp_path / "other.json", run("other-2", [config(latency_samples(1.0, 0.01), size=32, extra=rounds)], env=rounds)
    )
    assert run_cli(["compare", runs["base"], elsewhere, "--fail-on-regression"]) == 2
    assert "no config in common" in capsys.readouterr().err


def test_history_says_when_its_filters_match_nothing(tmp_path, capsys):
    db = tmp_path / "h.db"
    ResultStore(db).close()
    listed = tmp_path / "h.json"
    assert run_cli(["history", "--db", str(db), "--tag", "nosuchtag", "--json", str(listed)]) == 0
    assert json.loads(listed.read_text())["runs"] == [] and "--tag nosuchtag" in " ".join(
        capsys.readouterr().out.split()
    )
