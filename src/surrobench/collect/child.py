"""One config in a process of its own: the profiling child, and a target for external profilers.

Profiling never shares a process with timing (docs/sources.md, method §5)::

    python -m surrobench.collect.child --config CONFIG.json --result RESULT.json \\
        [--profiler torch|none|ncu] [--wait 2] [--warmup 5] [--active 5] [--with-stack] [--trace-out T.json.gz] \\
        [--control-fifo CTL,ACK]

``CONFIG.json``: an :class:`~surrobench.execution.config.ExecConfig`'s ``to_json()``. The model and
inputs are built as the timing runner builds them (:func:`~surrobench.execution.runner.config_step`), then the
cold-start call, ``warmup`` untimed calls (the timing's; none under ``torch``) and ``wait + warmup + active`` steps
in the ``surrobench::forward`` / ``surrobench::post_process`` ranges (:mod:`surrobench.execution.ranges`).

- ``torch``: torch.profiler records the steps and the op table is written.
- ``none``: the same steps bare, bracketed on CUDA by ``cudaProfilerStart``/``Stop`` (``nsys profile
  --capture-range=cudaProfilerApi``); with ``--control-fifo CTL,ACK`` also by perf's control protocol
  (``enable``/``disable`` written to ``CTL``, each answered by ``ack`` on ``ACK``; ``perf stat --delay=-1
  --control=fifo:ctl,ack``, perf >= 5.9), so perf counts only the measured steps.
- ``ncu`` (CUDA): ``wait + warmup`` bare steps, then each active step alone in the NVTX range
  ``surrobench_step`` (``ncu --nvtx --nvtx-include surrobench_step/``, :mod:`surrobench.collect.ncu`).

Module paths (:func:`module_ranges`): forward (pre-)hooks (``always_call=True``) open and close
``surrobench::module::<path>`` per module call (docs/design.md, "Kernel attribution": ``with_modules`` is
TorchScript-only, ``with_stack`` names classes). No hooks for a graph replay or a compiled module
(:func:`modules_lost`).

``RESULT.json`` (``surrobench/profile-child-v1``): status (``ok``, ``oom``, ``error``), per-step host ms, op table,
warnings, trace path. Exit code 0 whenever the result was written (a failing model is a status), 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path

import torch
from torch import nn
from torch.profiler import record_function

from surrobench.collect.torch_profiler import ProfileSchedule, profile_steps
from surrobench.execution.config import ExecConfig
from surrobench.execution.failures import failure_status
from surrobench.execution.ranges import annotated_step, phase_range
from surrobench.execution.runner import config_step, error_text, in_grad_mode, prepare_model
from surrobench.execution.timing import time_once, warm_up
from surrobench.records import schemas
from surrobench.records.kernels import MODULE_RANGE_PREFIX
from surrobench.records.stats import NS_PER_MS
from surrobench.workload.loader import resolve_model

PROFILERS = ("torch", "none", "ncu")
#: The NVTX range around each active step of ``--profiler ncu``: ``ncu --nvtx --nvtx-include surrobench_step/``.
STEP_RANGE = "surrobench_step"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
CHILD_TIMEOUT_S = 3600
"""Wall-clock limit of one child. Generous: a ``compile`` config compiles again in the child."""


#: Why each mode has no module paths (None: hooks hold).
_LOST = {
    "eager": None,
    "compile": "torch.compile mode: the compiled step runs no module forward in Python",
    "cudagraph": "CUDA-graph mode: a graph replay runs no module forward",
}


def modules_lost(mode: str) -> str | None:
    """Why a config of ``mode`` records no module paths; None where it does (eager)."""
    return _LOST.get(mode, f"{mode} mode: no module hooks")


@contextlib.contextmanager
def module_ranges(model: nn.Module) -> Iterator[None]:
    """Open a ``surrobench::module::<path>`` range around every module call of ``model`` while inside."""
    handles, open_ranges = [], {}

    def enter(path: str, module, args) -> None:
        scope = record_function(MODULE_RANGE_PREFIX + path)
        scope.__enter__()
        open_ranges.setdefault(path, []).append(scope)

    def leave(path: str, module, args, output) -> None:
        stack = open_ranges.get(path)
        if stack:
            stack.pop().__exit__(None, None, None)

    try:
        for path, module in model.named_modules():
            handles.append(module.register_forward_pre_hook(functools.partial(enter, path)))
            handles.append(module.register_forward_hook(functools.partial(leave, path), always_call=True))
        yield
    finally:
        for handle in handles:
            handle.remove()


def config_stem(run_id: str, cfg: ExecConfig) -> str:
    """``<run>_<model>_<shape>_b<batch>_<precision>_<mode>`` with unsafe characters as ``-``: a file name."""
    return _UNSAFE.sub("-", f"{run_id}_{cfg.model}_{cfg.shape.label()}_b{cfg.batch}_{cfg.precision}_{cfg.mode}")


class ControlFifo:
    """The writing side of perf's control protocol over two FIFOs (module docstring). :meth:`send` raises
    RuntimeError: the peer closed the ACK FIFO or answered something other than ``ack``."""

    def __init__(self, ctl: Path, ack: Path):
        self._ctl = open(ctl, "w")  # held for the whole loop, closed by close()
        self._ack = open(ack, "rb")

    def send(self, command: str) -> None:
        """Write ``command`` and wait for the peer's ``ack`` (perf may prefix it with a NUL byte)."""
        self._ctl.write(command + "\n")
        self._ctl.flush()
        reply = self._ack.readline()
        if b"ack" not in reply:
            raise RuntimeError(f"control FIFO: expected 'ack' after {command!r}, got {reply!r}")

    def close(self) -> None:
        self._ctl.close()
        self._ack.close()


def _bare(step_ms: list[float], active_ms: list[float]) -> dict:
    """The result body of a run without torch.profiler: step times (ms), no op table, trace or messages."""
    return dict(step_ms=step_ms, active_step_ms=active_ms, op_table=None, trace_path=None, errors=[], warnings=[])


def run_config(
    cfg: ExecConfig,
    profiler: str,
    plan: ProfileSchedule,
    *,
    with_stack: bool = False,
    trace_path: Path | None = None,
    control: ControlFifo | None = None,
) -> dict:
    """Build, warm up and run one config in this process; the result as ``RESULT.json`` holds it.
    ``control`` (only with ``profiler="none"``) brackets the active steps, see :class:`ControlFifo`."""
    prepared = prepare_model(resolve_model(cfg.model, cfg.trust_pickle), cfg.device, cfg.seed)

    def first_called() -> tuple:  # the step and its inputs, its settings kept on ``stack`` once its first call ran
        with contextlib.ExitStack() as built:
            with phase_range("data_prep", cfg.device):
                step, input_sets = built.enter_context(config_step(cfg, prepared))
            time_once(step, cfg.device)  # cold start: lazy init, compilation, graph capture, autotuning
            stack.enter_context(built.pop_all())
        return step, input_sets

    with contextlib.ExitStack() as stack:
        step, input_sets = in_grad_mode(prepared, first_called)
        warm_up(step, 0 if profiler == "torch" and cfg.device == "cpu" else cfg.warmup, cfg.device)
        phased = annotated_step(step, cfg.device)
        if profiler == "ncu":
            if cfg.device != "cuda":
                raise ValueError("--profiler ncu needs a CUDA config")
            # the loop of the module docstring: each active step synchronized, the only range open (as
            # benchmarks/ncu_step.py), so ncu replays just its kernels
            step_ms = []
            for i in range(plan.total):
                active = i >= plan.wait + plan.warmup
                t0 = time.perf_counter_ns()
                if active:
                    torch.cuda.nvtx.range_push(STEP_RANGE)
                step(i)
                torch.cuda.synchronize()
                if active:
                    torch.cuda.nvtx.range_pop()
                step_ms.append((time.perf_counter_ns() - t0) / NS_PER_MS)
            body = _bare(step_ms, step_ms[plan.wait + plan.warmup :])
        elif profiler == "none":
            step_ms = []  # the loop of the module docstring: the active steps bracketed, control's commands sent
            for i in range(plan.total):
                if i == plan.wait + plan.warmup:
                    if cfg.device == "cuda":
                        torch.cuda.profiler.start()
                    if control is not None:
                        control.send("enable")
                t0 = time.perf_counter_ns()
                phased(i)
                step_ms.append((time.perf_counter_ns() - t0) / NS_PER_MS)
            if control is not None:
                control.send("disable")
            if cfg.device == "cuda":
                torch.cuda.profiler.stop()
            body = _bare(step_ms, step_ms[plan.wait + plan.warmup :])
        else:
            # module ranges only where kernels are recorded: on a CPU run they would only add profiler overhead
            lost = modules_lost(cfg.mode) if cfg.device == "cuda" else "CPU run: no kernels"
            with module_ranges(prepared.module) if lost is None else contextlib.nullcontext():
                capture = profile_steps(
                    phased, plan, cfg.device, with_stack=with_stack, trace_path=trace_path, modules_lost=lost, keep=True
                )
            tables = ("op_table", "kernel_table")
            body = {f.name: getattr(capture, f.name) for f in fields(capture) if f.name not in tables}
            body.update({name: t.to_json() if (t := getattr(capture, name)) else None for name in tables})
    return {
        "schema": schemas.PROFILE_CHILD,
        "status": "error" if body["errors"] else "ok",
        "error": "; ".join(body["errors"]) or None,
        "profiler": profiler,
        "input_shape": list(input_sets[0][0].shape),
        **body,
    }


def _failure(status: str, exc: BaseException) -> dict:
    """The child's result for a config that ended ``status`` (``oom``, ``error``) with ``exc``, its error
    recorded as the runner records one (:func:`~surrobench.execution.runner.error_text`)."""
    return {"schema": schemas.PROFILE_CHILD, "status": status, "error": error_text(exc), **_bare([], [])}


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code (0: result written, 2: bad arguments or config file)."""
    p = argparse.ArgumentParser(prog="python -m surrobench.collect.child", description=__doc__.split("\n")[0])
    p.add_argument("--config", type=Path, required=True, help="ExecConfig JSON file")
    p.add_argument("--result", type=Path, required=True, help="where to write the result JSON")
    p.add_argument("--profiler", choices=PROFILERS, default="torch")
    p.add_argument("--wait", type=int, default=ProfileSchedule.wait)
    p.add_argument("--warmup", type=int, default=ProfileSchedule.warmup)
    p.add_argument("--active", type=int, default=ProfileSchedule.active)
    p.add_argument("--with-stack", action="store_true")
    p.add_argument("--trace-out", type=Path, default=None, help="Chrome trace file (.json or .json.gz)")
    p.add_argument(
        "--control-fifo",
        default=None,
        metavar="CTL,ACK",
        help="perf control FIFOs: 'enable'/'disable' around the active steps (--profiler none)",
    )
    args = p.parse_args(argv)
    try:
        cfg = ExecConfig.from_json(json.loads(args.config.read_text()))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"surrobench.collect.child: error: --config {args.config}: {exc}", file=sys.stderr)
        return 2
    plan = ProfileSchedule(args.wait, args.warmup, args.active)
    control = None
    if args.control_fifo is not None:
        if args.profiler != "none" or args.control_fifo.count(",") != 1:
            print("surrobench.collect.child: error: --control-fifo CTL,ACK needs --profiler none", file=sys.stderr)
            return 2
        control = ControlFifo(*map(Path, args.control_fifo.split(",")))
    try:
        result = run_config(
            cfg, args.profiler, plan, with_stack=args.with_stack, trace_path=args.trace_out, control=control
        )
    except Exception as exc:  # the model's failure is a status (``oom`` for an allocation), as in the runner
        result = _failure(failure_status(exc), exc)
    finally:
        if control is not None:
            control.close()
    args.result.write_text(json.dumps(result) + "\n")
    return 0


def child_argv(
    config_path: Path,
    result_path: Path,
    plan: ProfileSchedule,
    *,
    profiler: str = "torch",
    with_stack: bool = False,
    trace_path: Path | None = None,
    control_fifo: tuple[Path, Path] | None = None,
) -> list[str]:
    """The child's command line, for :func:`spawn` or for a wrapping tool (``nsys profile <argv>``).
    ``control_fifo`` is the (CTL, ACK) FIFO pair of ``--control-fifo``."""
    argv = [sys.executable, "-m", "surrobench.collect.child", "--config", str(config_path)]
    argv += ["--result", str(result_path), "--profiler", profiler, "--wait", str(plan.wait)]
    argv += ["--warmup", str(plan.warmup), "--active", str(plan.active)]
    argv += ["--with-stack"] if with_stack else []
    argv += ["--control-fifo", f"{control_fifo[0]},{control_fifo[1]}"] if control_fifo is not None else []
    return argv + (["--trace-out", str(trace_path)] if trace_path is not None else [])


def spawn(
    cfg: ExecConfig,
    plan: ProfileSchedule,
    *,
    with_stack: bool = False,
    trace_path: Path | None = None,
) -> dict:
    """Run :func:`main` in a new Python process for ``cfg`` under torch.profiler; its result object. A child that
    dies or runs over :data:`CHILD_TIMEOUT_S` without a result: status ``error`` with the last line of its stderr."""
    with tempfile.TemporaryDirectory(prefix="surrobench-child-") as tmp:
        config_path, result_path = Path(tmp) / "config.json", Path(tmp) / "result.json"
        config_path.write_text(json.dumps(cfg.to_json()))
        argv = child_argv(config_path, result_path, plan, with_stack=with_stack, trace_path=trace_path)
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return child_result(result_path, None, "")
        return child_result(result_path, proc.returncode, proc.stderr)


def child_result(result_path: Path, returncode: int | None, stderr: str) -> dict:
    """The child's result at ``result_path``, else an ``error`` one: ``returncode`` (None: timed out), stderr's end."""
    if returncode is None:
        return _failure("error", TimeoutError(f"profiling child ran over {CHILD_TIMEOUT_S:.0f} s"))
    if returncode == 0 and result_path.is_file():
        return json.loads(result_path.read_text())
    last = ([line for line in stderr.splitlines() if line.strip()] or ["no output"])[-1]
    return _failure("error", RuntimeError(f"profiling child exited with {returncode}: {last}"))


if __name__ == "__main__":
    code = main()
    sys.stdout.flush(), sys.stderr.flush()
    os._exit(code)  # the result is written: freeing the capture and torch took 0.9 CPU s (benchmarks/profile-cost.md)
