"""The system-level pass (docs/sources.md, tools §1 and §4): ``perf`` counters, hot spots and a Python sampler over
one config's measured steps, as a :class:`SystemView`.

Each config runs twice in a child (:mod:`surrobench.collect.child`, ``--profiler none``): ``perf stat`` (counting
only), then ``perf record -g -F 499`` with py-spy (native self shares: no frame pointers; Python inclusive
shares). The child's ``enable``/``disable`` FIFO is relayed to the tools so only the active steps count; a perf
without ``--control`` (< 5.9) counts the whole child and says so. A missing tool is a note with its install line."""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import psutil

from surrobench.collect.child import CHILD_TIMEOUT_S, _failure, child_argv, child_result
from surrobench.collect.perf_parse import PERF_EVENTS, CounterSummary, PerfAccess, parse_flamegraph_svg, perf_access
from surrobench.collect.perf_parse import parse_perf_report, parse_stat_csv, permission_reason, summarize_counters
from surrobench.collect.torch_profiler import ProfileSchedule
from surrobench.execution.config import ExecConfig
from surrobench.records.system import HostHotspot, SystemView

PERF_INSTALL = "apt-get install linux-perf (Debian; Ubuntu: linux-tools-$(uname -r))"
PY_SPY_INSTALL = "pip install py-spy"
PERF_RECORD_HZ = 499  # odd, so sampling does not lock onto a periodic timer in the workload (perf wiki)
PY_SPY_RATE_HZ = 100  # py-spy's default rate
REPORT_PERCENT_LIMIT = 0.5  # perf report rows under 0.5% of the samples are noise at these sample counts
TRUNK_SHARE = 0.99  # py-spy frames on >= 99% of the samples with < 1% self time: the harness around
TRUNK_SELF_MAX = 0.01  # the step (measured: the child's step loop 100% / 0.2% self), not hot spots
_ACK_TIMEOUT_S = 30.0
_POLL_S = 0.2


@dataclass(frozen=True)
class Tools:
    """Paths of ``perf`` and ``py-spy`` (None when missing) and whether perf has ``--control``."""

    perf: str | None
    py_spy: str | None
    perf_control: bool

    @classmethod
    def find(cls) -> Tools:
        """Look on PATH, and for py-spy also beside this Python (a virtual environment's ``bin/``)."""
        perf = shutil.which("perf")
        beside = Path(sys.executable).parent / "py-spy"
        py_spy = shutil.which("py-spy") or (str(beside) if beside.is_file() else None)
        control = False
        if perf is not None:
            usage = subprocess.run([perf, "stat", "-h"], capture_output=True, text=True)
            control = "--control" in usage.stdout + usage.stderr
        return cls(perf, py_spy, control)

    def missing_notes(self) -> list[str]:
        """One note per missing tool, with how to install it."""
        notes = [] if self.perf else [f"perf not found: no counters or native hot spots; install: {PERF_INSTALL}"]
        if self.py_spy is None:
            notes.append(f"py-spy not found: no Python hot spots or flame graph; install: {PY_SPY_INSTALL}")
        if self.perf and not self.perf_control:
            notes.append(
                "this perf has no --control (perf < 5.9): counts cover the whole child process "
                "(start-up, imports, model build and warm-up included), not just the measured steps"
            )
        return notes


class _PerfControl:
    """A pair of FIFOs of perf's control protocol, ``<name>-ctl`` and ``<name>-ack`` made in ``folder``, held open
    until the ``with`` block ends: perf's (this process sends ``enable``/``disable`` and waits for ``ack``) or the
    child's (``--control-fifo``: it sends, :func:`run_windowed` answers)."""

    def __init__(self, folder: Path, name: str = "perf"):
        self.ctl, self.ack = folder / f"{name}-ctl", folder / f"{name}-ack"
        os.mkfifo(self.ctl)
        os.mkfifo(self.ack)
        # O_RDWR: opening never blocks on a peer that has not started yet
        self.ctl_fd, self.ack_fd = os.open(self.ctl, os.O_RDWR), os.open(self.ack, os.O_RDWR)

    def __enter__(self) -> _PerfControl:
        return self

    def __exit__(self, *exc) -> None:
        os.close(self.ctl_fd)
        os.close(self.ack_fd)

    def option(self) -> str:
        return f"--control=fifo:{self.ctl},{self.ack}"

    def enable(self, root_pid: int) -> None:
        self._send("enable")

    def disable(self) -> None:
        self._send("disable")

    def _send(self, command: str) -> None:
        os.write(self.ctl_fd, f"{command}\n".encode())
        if not select.select([self.ack_fd], [], [], _ACK_TIMEOUT_S)[0]:
            raise RuntimeError(f"perf did not acknowledge {command!r} within {_ACK_TIMEOUT_S:.0f} s")
        os.read(self.ack_fd, 64)


class _PySpy:
    """py-spy on the child for the window: started on enable, SIGINT on disable (writes the SVG)."""

    def __init__(self, exe: str, svg: Path):
        self.exe, self.svg, self.proc = exe, svg, None

    def enable(self, root_pid: int) -> None:
        argv = [self.exe, "record", "--pid", str(_child_pid(root_pid)), "--format", "flamegraph", "--nolineno"]
        argv += ["--rate", str(PY_SPY_RATE_HZ), "--output", str(self.svg)]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines = []
        for line in self.proc.stdout:  # py-spy says "Sampling process ..." once attached
            lines.append(line.strip())
            if "Sampling process" in line:
                return
        self.proc.wait()
        raise RuntimeError(f"py-spy did not attach: {' '.join(lines)[-300:]}")

    def disable(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGINT)
        out, _ = self.proc.communicate(timeout=_ACK_TIMEOUT_S)
        if not self.svg.is_file():
            raise RuntimeError(f"py-spy wrote no flame graph: {out.strip()[-300:]}")


def _child_pid(root: int) -> int:
    """The Python child's pid: ``root`` itself, or its descendant running the child module (under perf)."""
    for proc in [psutil.Process(root), *psutil.Process(root).children(recursive=True)]:
        if proc.cmdline()[1:3] == ["-m", "surrobench.collect.child"]:  # perf's own argv holds it later
            return proc.pid
    raise RuntimeError(f"no surrobench.collect.child process under pid {root}")


@dataclass(frozen=True)
class Windowed:
    """One child run under a tool: the child's result, the window's wall time (ms), the run's stderr."""

    child: dict
    window_ms: float | None
    elapsed_ms: float
    stderr: str


def run_windowed(
    prefix: list[str],
    cfg: ExecConfig,
    plan: ProfileSchedule,
    folder: Path,
    tools: list,
) -> Windowed:
    """Run the child under ``prefix``, relaying enable/disable to ``tools``; failing tools are warnings; killed after
    :data:`~surrobench.collect.child.CHILD_TIMEOUT_S`."""
    config_path, result_path, stderr_path = folder / "config.json", folder / "result.json", folder / "stderr.txt"
    config_path.write_text(json.dumps(cfg.to_json()))
    errors: list[str] = []
    times: dict[str, float] = {}
    started = time.perf_counter()
    with open(stderr_path, "w") as stderr, _PerfControl(folder, "child") as fifos:
        control_fifo = (fifos.ctl, fifos.ack)
        argv = prefix + child_argv(config_path, result_path, plan, profiler="none", control_fifo=control_fifo)
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=stderr)
        deadline, pending = time.monotonic() + CHILD_TIMEOUT_S, b""
        while proc.poll() is None and time.monotonic() < deadline:
            if not select.select([fifos.ctl_fd], [], [], _POLL_S)[0]:
                continue
            pending += os.read(fifos.ctl_fd, 256)
            while b"\n" in pending:
                command, pending = pending.split(b"\n", 1)
                _relay(command.decode().strip(), tools, proc.pid, times, errors)
                os.write(fifos.ack_fd, b"ack\n")
        timed_out = proc.poll() is None
        if timed_out:
            proc.kill()
            proc.wait()
    elapsed_ms = (time.perf_counter() - started) * 1e3
    text = stderr_path.read_text()
    child = child_result(result_path, None if timed_out else proc.returncode, text)
    child["warnings"] = [*child.get("warnings", []), *errors]
    window_ms = (times["disable"] - times["enable"]) * 1e3 if len(times) == 2 else None
    return Windowed(child, window_ms, elapsed_ms, text)


def _relay(command: str, tools: list, root_pid: int, times: dict[str, float], errors: list[str]) -> None:
    """Pass one child command to the tools (disable in reverse order) and note the window's ends."""
    if command not in ("enable", "disable"):
        errors.append(f"child sent {command!r} on the control FIFO; expected enable or disable")
        return
    if command == "disable":
        times["disable"] = time.perf_counter()
    for tool in tools if command == "enable" else reversed(tools):
        try:
            tool.enable(root_pid) if command == "enable" else tool.disable()
        except (RuntimeError, OSError, subprocess.SubprocessError, psutil.Error) as exc:
            errors.append(f"{type(tool).__name__.strip('_')} {command}: {exc}")
    if command == "enable":
        times["enable"] = time.perf_counter()


def count_config(
    cfg: ExecConfig, plan: ProfileSchedule, tools: Tools, access: PerfAccess, folder: Path
) -> tuple[CounterSummary, Windowed, float | None]:
    """``perf stat`` over the active steps: the counters, the run, and the counted wall ms (None if never reached)."""
    control = _PerfControl(folder) if tools.perf_control else None
    out = folder / "stat.csv"
    prefix = [tools.perf, "stat", "-x,", "-o", str(out), "-e", ",".join(PERF_EVENTS)]
    prefix += ["--delay=-1", control.option()] if control else []
    with control or contextlib.nullcontext():
        run = run_windowed([*prefix, "--"], cfg, plan, folder, [control] if control else [])
    reason = permission_reason(run.stderr, access)
    if reason is not None or not out.is_file():
        reason = reason or f"perf stat wrote no counters: {run.stderr.strip()[-200:]}"
        return CounterSummary(dict.fromkeys(PERF_EVENTS), dict.fromkeys(PERF_EVENTS, reason)), run, None
    wall_ms = run.window_ms if control else run.elapsed_ms
    return summarize_counters(parse_stat_csv(out.read_text()), access), run, wall_ms


def sample_config(
    cfg: ExecConfig, plan: ProfileSchedule, tools: Tools, folder: Path, svg: Path, top: int
) -> tuple[tuple[HostHotspot, ...], Windowed]:
    """``perf record -g`` and py-spy over the active steps: ``top`` Python then native hot spots, the run."""
    prefix, samplers, control = [], [], None
    data = folder / "perf.data"
    if tools.perf:
        control = _PerfControl(folder) if tools.perf_control else None
        prefix = [tools.perf, "record", "-g", "-F", str(PERF_RECORD_HZ), "-o", str(data), "--quiet"]
        prefix += ["--delay=-1", control.option(), "--"] if control else ["--"]
        samplers += [control] if control else []
    if tools.py_spy:
        samplers.append(_PySpy(tools.py_spy, svg))
    with control or contextlib.nullcontext():
        run = run_windowed(prefix, cfg, plan, folder, samplers)
    spots: list[HostHotspot] = []
    if svg.is_file():
        try:
            python_spots = parse_flamegraph_svg(svg.read_text())[0]
            trunk = [s.share >= TRUNK_SHARE and (s.self_share or 0.0) < TRUNK_SELF_MAX for s in python_spots]
            spots += [s for s, t in zip(python_spots, trunk) if not t][:top]
        except (ValueError, ET.ParseError) as exc:
            run.child["warnings"].append(f"py-spy flame graph unreadable: {exc}")
    if data.is_file():
        argv = [tools.perf, "report", "-i", str(data), "--stdio", "--no-children", "-F", "overhead,dso,sym"]
        argv += ["-g", "none", "--percent-limit", str(REPORT_PERCENT_LIMIT)]
        spots += parse_perf_report(subprocess.run(argv, capture_output=True, text=True).stdout)[:top]
    return tuple(spots), run


@dataclass(frozen=True)
class SystemPass:
    """One config's system ``view``, perf ``summary``, ``flamegraph``, ``child`` result and ``notes``."""

    view: SystemView
    summary: CounterSummary | None
    flamegraph: Path | None
    child: dict
    notes: tuple[str, ...]


def system_pass(
    cfg: ExecConfig, plan: ProfileSchedule, flamegraph: Path | None = None, *, top: int = 20, tools: Tools | None = None
) -> SystemPass:
    """Count, then sample, ``cfg``'s active steps; never raises for a missing tool (notes say why)."""
    tools = tools or Tools.find()
    access = perf_access()
    notes = tools.missing_notes()
    summary, wall_ms, spots, children = None, None, (), []
    with tempfile.TemporaryDirectory(prefix="surrobench-perf-") as tmp:
        if tools.perf:
            (Path(tmp) / "stat").mkdir()
            summary, run, wall_ms = count_config(cfg, plan, tools, access, Path(tmp) / "stat")
            children.append(run.child)
        svg = flamegraph or Path(tmp) / "flamegraph.svg"
        if tools.perf or tools.py_spy:
            (Path(tmp) / "sample").mkdir()
            spots, run = sample_config(cfg, plan, tools, Path(tmp) / "sample", svg, top)
            children.append(run.child)
    if not children:
        children.append(_failure("error", RuntimeError("neither perf nor py-spy is installed")))
    notes += dict.fromkeys(w for c in children for w in c["warnings"])  # each warning once, in order
    child = next((c for c in children if c["status"] != "ok"), children[0])
    view = _view(summary, wall_ms, spots)
    return SystemPass(view, summary, flamegraph if flamegraph and flamegraph.is_file() else None, child, tuple(notes))


def _view(summary: CounterSummary | None, wall_ms: float | None, spots: tuple[HostHotspot, ...]) -> SystemView:
    ordered = tuple(sorted(spots, key=lambda s: -s.share))
    if summary is None:
        reason = f"perf not installed ({PERF_INSTALL})"
        return SystemView(unavailable=dict.fromkeys(PERF_EVENTS, reason), hotspots=ordered)
    task_ms = summary.counters.get("task-clock")
    util = task_ms / wall_ms if task_ms is not None and wall_ms else None
    return SystemView(task_ms, wall_ms, util, summary.ipc, dict(summary.counters), dict(summary.unavailable), ordered)
