"""SIGTERM and SIGHUP end ``surrobench run`` as Ctrl-C does: real processes, since a signal to a process is
what is tested (the in-process Ctrl-C path is tested in test_run_cli.py); a signal during a document's write
waits for the file, in this process."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import weakref
from pathlib import Path

import pytest

from surrobench.cli import options
from surrobench.cli.options import write_json
from surrobench.cli.signals import interrupt_exit_code, signals_as_interrupt
from surrobench.results.store import ResultStore

SLEEPY = """
import time
import weakref
import torch


class Sleepy(torch.nn.Module):
    def forward(self, x):
        time.sleep(0.05)
        return x * 2


def build():
    return Sleepy()
"""


def _stored_configs(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db) as conn:
            return conn.execute("SELECT count(*) FROM configs").fetchone()[0]
    except sqlite3.OperationalError:  # the tables are not created yet
        return 0


def _judged_candidates(db: Path) -> int:
    """The candidates of the optimize report stored in ``db`` so far (0 before the first verdict)."""
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db) as conn:
            rows = conn.execute("SELECT report_json FROM optimizations").fetchall()
    except sqlite3.OperationalError:  # the tables are not created yet
        return 0
    return sum(len(c["candidates"]) for (report,) in rows for c in json.loads(report)["configs"])


def start_sleepy_run(tmp_path: Path, *extra: str, wait: bool = True) -> tuple[subprocess.Popen, Path, Path]:
    """``surrobench run`` of a model that sleeps 50 ms per forward, 4 configs of about 1 s each; returns
    the process once its first config is stored (at once when not ``wait``), with its database and JSON
    paths."""
    model, db, out = tmp_path / "sleepy.py", tmp_path / "r.db", tmp_path / "run.json"
    model.write_text(SLEEPY)
    cmd = [sys.executable, "-m", "surrobench", "run", "--model", f"{model}:build", "--shape", "4"]
    cmd += ["--batch", "1,2,3,4", "--device", "cpu", "--warmup", "0", "--iters", "20", "--input-sets", "1"]
    cmd += ["--db", str(db), "--json", str(out), *extra]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 120
    while wait and _stored_configs(db) < 1:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the run ended or hung before its first config: {proc.communicate()[1][-2000:]}")
        time.sleep(0.05)
    return proc, db, out


def test_a_signal_keeps_what_finished_as_ctrl_c_does(tmp_path):
    """SIGTERM and SIGHUP, each to its own run; the two runs go at once (each spends seconds importing torch)."""
    runs = {}
    try:
        for sig in (signal.SIGTERM, signal.SIGHUP):
            (tmp_path / sig.name).mkdir()
            runs[sig] = start_sleepy_run(tmp_path / sig.name, wait=False)
        waiting, deadline = dict(runs), time.monotonic() + 120
        while waiting:  # each run gets its signal as soon as its first config is stored
            for sig, (proc, db, _) in list(waiting.items()):
                if _stored_configs(db) >= 1:
                    proc.send_signal(sig)
                    del waiting[sig]
                elif proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"the run ended or hung before its first config: {proc.communicate()[1][-2000:]}")
            time.sleep(0.05)
        for sig, (proc, db, out) in runs.items():
            _, err = proc.communicate(timeout=60)
            assert proc.returncode == 128 + sig
            doc = json.loads(out.read_text())
            kept = len(doc["results"])
            assert 1 <= kept < 4 and doc["env"]["interrupted"] is True
            assert f"{sig.name}: interrupted" in err and doc["run_id"] in err  # the signal, the run kept
            assert "Traceback" not in err
            assert "timed 1/4: " in err  # piped: a line per config, where a progress bar draws nothing
            with ResultStore(db) as store:
                assert store.run_state(doc["run_id"]) == "interrupted"
                assert len(store.load_run(doc["run_id"]).results) == kept
    finally:
        for proc, _, _ in runs.values():
            proc.kill()
            proc.wait()


def test_a_killed_run_is_listed_abandoned(tmp_path):
    """SIGKILL leaves no chance to mark the run: ``history`` sees its process gone."""
    proc, db, _ = start_sleepy_run(tmp_path)
    with ResultStore(db) as store:
        assert [r.state for r in store.list_runs()] == ["running"]
    proc.kill()
    proc.communicate(timeout=60)
    with ResultStore(db) as store:
        (summary,) = store.list_runs()
        assert summary.state == "abandoned" and summary.n_configs >= 1
        assert store.run_state(summary.run_id) == "abandoned"  # read so, and what is stored is left as it was:
        assert store.conn.execute("SELECT state FROM runs").fetchall() == [("running",)]


def test_sigterm_mid_search_keeps_the_candidates_judged_so_far(tmp_path):
    """optimize, cut by SIGTERM while it searches a config: the candidates judged are stored and in --json."""
    model, db, out, err = tmp_path / "sleepy.py", tmp_path / "o.db", tmp_path / "o.json", tmp_path / "err.txt"
    model.write_text(SLEEPY.replace("return x * 2", "return torch.nn.functional.conv2d(x, torch.ones(3, 3, 1, 1))"))
    cmd = [sys.executable, "-m", "surrobench", "optimize", "--model", f"{model}:build", "--shape", "8"]
    cmd += ["--batch", "1", "--device", "cpu", "--warmup", "1", "--iters", "20", "--processes", "0"]
    cmd += ["--db", str(db), "--json", str(out)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OMP_NUM_THREADS": "1"}
    with open(err, "w") as stderr:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=stderr, env=env)
        deadline = time.monotonic() + 120
        while not _judged_candidates(db):  # optimize stores its report as each candidate is judged
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"optimize ended or hung before its search: {err.read_text()[-2000:]}")
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    assert "SIGTERM: interrupted" in err.read_text()
    doc = json.loads(out.read_text())
    (config,) = doc["configs"]
    assert doc["interrupted"] is True and config["cut_short"] is True and len(config["candidates"]) >= 1
    with ResultStore(db) as store:
        (stored,) = store.conn.execute("SELECT report_json FROM optimizations").fetchall()
        assert json.loads(stored[0])["configs"][0]["candidates"] == config["candidates"]
        assert store.run_state(doc["baseline_run_id"]) == "interrupted"


def test_ctrl_c_to_the_process_group_while_diagnose_profiles(tmp_path):
    """diagnose, cut while profiling (the profiling child gets the signal too, as under ``timeout -s INT``):
    exit 130, the K-of-N line, the run marked interrupted, --json the findings of the config profiled."""
    db, out, err_file = tmp_path / "d.db", tmp_path / "d.json", tmp_path / "err.txt"
    cmd = [sys.executable, "-m", "surrobench", "diagnose", "--model", "pinn-mlp", "--shape", "64", "--batch", "1,2"]
    cmd += ["--device", "cpu", "--threads", "1", "--warmup", "1", "--iters", "8", "--profile-wait", "1"]
    cmd += ["--profile-warmup", "1", "--profile-active", "2", "--db", str(db), "--json", str(out)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OMP_NUM_THREADS": "1"}
    with open(err_file, "w") as stderr:
        proc = subprocess.Popen(  # a process group of its own, as `timeout` makes: its children get the signal too
            cmd,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env=env,
            start_new_session=True,
            # a shell that starts the suite in the background has SIGINT ignored, and a Python started so keeps
            # it ignored (as a background job should): the command under test starts as from a terminal
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
    try:
        deadline = time.monotonic() + 180
        while "profiled 1/2: " not in err_file.read_text():  # piped: a line per profiled config
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"diagnose ended or hung before its first profile: {err_file.read_text()[-2000:]}")
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=60) == 130, err_file.read_text()[-2000:]
    finally:
        proc.kill()
        proc.wait()
    err, doc = err_file.read_text(), json.loads(out.read_text())
    run_id = doc["context"]["run_id"]
    assert run_id in err  # the line names the run kept
    assert "Traceback" not in err and doc["context"]["interrupted"] is True
    assert len(doc["context"]["profiled"]) == 1
    with ResultStore(db) as store:
        assert store.run_state(run_id) == "interrupted" and len(store.load_run(run_id).results) == 2


def _signal_during_the_rename(monkeypatch, signum: int) -> None:
    """Send ``signum`` to this process just before the document's temporary file is renamed over the target."""
    rename = os.replace

    def rename_after_a_signal(src, dst):
        os.kill(os.getpid(), signum)  # its Python handler runs before the next line of this function
        rename(src, dst)

    monkeypatch.setattr(options.os, "replace", rename_after_a_signal)


def test_a_signal_during_a_document_write_ends_the_command_once_the_file_is_written(tmp_path, monkeypatch):
    """A SIGTERM (as a second Ctrl-C) while --json is written: the file is written whole, then the signal ends
    the command with its own exit code."""
    target = tmp_path / "d.json"
    _signal_during_the_rename(monkeypatch, signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt), signals_as_interrupt():
        write_json(target, {"configs": [1, 2]})
    assert json.loads(target.read_text()) == {"configs": [1, 2]}
    assert interrupt_exit_code() == 128 + signal.SIGTERM
    assert not list(tmp_path.glob(".d.json.*.tmp"))


def test_an_ignored_signal_during_a_document_write_stays_ignored(tmp_path, monkeypatch):
    """A command started with SIGINT ignored (a background job, nohup) is not ended by it while writing."""
    target = tmp_path / "d.json"
    _signal_during_the_rename(monkeypatch, signal.SIGINT)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        write_json(target, {"configs": [1]})
    finally:
        signal.signal(signal.SIGINT, previous)
    assert json.loads(target.read_text()) == {"configs": [1]}


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_after_the_command_finished_keeps_its_exit_code(signum):
    """What the console command does once its command returned: a late signal, before the interpreter
    finalizes or while it tears its modules down (torch's teardown takes about a second), leaves the command's
    own exit code; CPython resets a handled signal to its default action as it finalizes, which killed the
    process by the signal."""
    code = (
        "import os, signal, sys, time\n"
        "from surrobench.cli.signals import ignore_late_signals\n"
        "class SlowTeardown:\n"
        "    def __del__(self):\n"
        f"        os.kill(os.getpid(), {int(signum)})\n"
        "        time.sleep(0.2)\n"
        "keep = SlowTeardown()  # a module global: deleted while the interpreter finalizes\n"
        "ignore_late_signals()\n"
        f"os.kill(os.getpid(), {int(signum)})\n"
        "time.sleep(0.2)\n"
        "sys.exit(3)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        timeout=20,
        capture_output=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as from a terminal (above)
    )
    assert proc.returncode == 3, proc.stderr


def test_a_ctrl_c_caught_in_code_run_from_a_string_keeps_the_exit_code_of_python_m(tmp_path):
    """``python -m surrobench`` cut while a lazy import makes a dataclass (its methods are ``exec``'d from a string:
    CPython then flags the KeyboardInterrupt as unhandled, though the command caught it): exit 130, not death by
    SIGINT at the interpreter's end (-2 under load, after the 'interrupted' line)."""
    (tmp_path / "cut_in_exec.py").write_text(
        "import sys\n"
        "import surrobench.cli as cli\n"
        "def main():\n"
        "    try:\n"
        "        exec('raise KeyboardInterrupt')  # as a Ctrl-C landing in a dataclass's generated method\n"
        "    except KeyboardInterrupt:\n"
        "        sys.exit(130)  # the command said what it kept\n"
        "cli.main = main\n"
        "cli.entry()\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    proc = subprocess.run([sys.executable, "-m", "cut_in_exec"], env=env, timeout=60, capture_output=True)
    assert proc.returncode == 130, proc.stderr


def test_a_ctrl_c_as_the_command_returns_is_an_interrupt_not_a_traceback(monkeypatch, capsys):
    """SIGINT that lands after click returned, before the command's signal handling ends (``surrobench run``
    printing its last line): exit 130 with the interrupt line, never a KeyboardInterrupt traceback."""
    import surrobench.cli as cli

    def returns_then_interrupted(**kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "app", returns_then_interrupted)
    monkeypatch.setattr(cli, "_register", lambda: None)
    with pytest.raises(SystemExit) as ended:
        cli.main(["history"])
    assert ended.value.code == 130
    assert capsys.readouterr().err.startswith("surrobench: interrupted")


def test_a_signal_after_the_command_said_what_it_kept_keeps_the_interrupted_exit_code(monkeypatch):
    """A second Ctrl-C after the 'interrupted: ...' line, before the late-signal guard: the exit code stays 130, the
    process does not die by the signal (it did, under load, as a -2 seen from the parent)."""
    import surrobench.cli as cli

    def cut_then_signalled():
        try:
            sys.exit(130)  # the command printed what it kept and exits ...
        finally:
            raise KeyboardInterrupt  # ... as the second signal arrives

    monkeypatch.setattr(cli, "main", cut_then_signalled)
    monkeypatch.setattr(cli, "ignore_late_signals", lambda: None)  # this process keeps its handlers
    monkeypatch.setattr(cli, "stray_threads", lambda: [])  # never os._exit the test process
    with pytest.raises(SystemExit) as done:
        cli.entry()
    assert done.value.code == 130


class _Freed:
    """An object whose death, watched by a weakref, sends SIGINT to this process from the weakref's callback (as a
    frame's tensors are freed while a KeyboardInterrupt unwinds it)."""

    @classmethod
    def watched(cls) -> tuple[_Freed, weakref.ref]:
        freed = cls()
        return freed, weakref.ref(freed, lambda _: os.kill(os.getpid(), signal.SIGINT))  # handled before it returns


@pytest.fixture
def ctrl_c(monkeypatch) -> list:
    """SIGINT as from a terminal (Python's handler, also when the suite runs with it ignored), and what Python would
    print as "Exception ignored" (raised in a weakref callback) collected instead."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    ignored: list = []
    monkeypatch.setattr(sys, "unraisablehook", ignored.append)
    yield ignored
    signal.signal(signal.SIGINT, previous)


def test_a_second_ctrl_c_as_the_first_unwinds_is_held(ctrl_c):
    """Ctrl-C twice 0.03 s apart: the second lands in a weakref callback as the first KeyboardInterrupt unwinds. It is
    held, never raised there (printed as "Exception ignored ... KeyboardInterrupt"); the exit code is the first's."""

    def unwinding() -> None:
        freed, watch = _Freed.watched()
        try:
            os.kill(os.getpid(), signal.SIGINT)
        finally:
            del freed  # its callback runs as the first unwinds

    with pytest.raises(KeyboardInterrupt), signals_as_interrupt():
        unwinding()
    assert ctrl_c == [] and interrupt_exit_code() == 130


def test_a_third_ctrl_c_ends_a_wind_down_the_second_could_not(ctrl_c):
    """After the first Ctrl-C, the second is held; a third interrupts the wind-down (one that hangs otherwise)."""
    with pytest.raises(KeyboardInterrupt), signals_as_interrupt():
        try:
            os.kill(os.getpid(), signal.SIGINT)
        except KeyboardInterrupt:
            os.kill(os.getpid(), signal.SIGINT)  # held: the wind-down goes on
            wound_down = True
            os.kill(os.getpid(), signal.SIGINT)
            wound_down = False  # never reached
    assert wound_down and interrupt_exit_code() == 130


def test_a_ctrl_c_lost_in_a_weakref_callback_leaves_the_next_one_to_interrupt(ctrl_c):
    """A first Ctrl-C raised in a weakref callback is lost there (Python prints it and goes on): not held as the
    first, the next one interrupts."""
    with pytest.raises(KeyboardInterrupt), signals_as_interrupt():
        freed, watch = _Freed.watched()
        del freed
        os.kill(os.getpid(), signal.SIGINT)
    assert ctrl_c == [] and interrupt_exit_code() == 130
