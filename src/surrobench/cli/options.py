"""The options the commands share (one definition per flag, so names and defaults agree) and the helpers that
check, write and print what a command makes."""

from __future__ import annotations

import contextlib
import copy
import functools
import inspect
import json
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, get_type_hints

import typer
from typer.models import OptionInfo
from rich.console import Console

from surrobench.api.defaults import DEFAULT_ACTIVE, DEFAULT_DB, DEFAULT_INPUT_SETS, DEFAULT_ITERS, DEFAULT_THRESHOLD
from surrobench.api.defaults import DEFAULT_WAIT, DEFAULT_WARMUP, DEFAULT_WINDOW_S, MAX_COUNT, MIN_ITERS, MIN_WARMUP
from surrobench.api.defaults import PerfOptions, ProfileSchedule, replace_file, write_recovery
from surrobench.api.defaults import ProfileOptions, prepare_trace_dir
from surrobench.cli.signals import signals_deferred
from surrobench.errors import EXIT_CONFIGS_FAILED, Interrupted, Stopped, Unsaved, UsageError
from surrobench.records import schemas
from surrobench.records.serve import CapacityOptimization
from surrobench.records.stats import MIN_SAMPLES_FOR_P95
from surrobench.records.config import MATMUL_PRECISIONS
from surrobench.records.vocab import COMPILE_MODES, MODES, PRECISIONS
from surrobench.report.escape import rich_escape

# torch is imported by the option methods that run a workload: every command imports this module, and `--help`
# needs no torch (docs/benchmarks/startup.md).
if TYPE_CHECKING:
    from surrobench.api.nsys import NsysOptions
    from surrobench.api.profile import SweepPlan

# Piped or captured output (CI logs, `| tee`): a wide fixed width, not rich's 80 columns that truncate tables.
_PIPE_WIDTH = 160


def _width(stream) -> int | None:
    """None (rich decides: the terminal's width, or $COLUMNS when set) unless piped without $COLUMNS."""
    if stream is None:  # closed; the CLI refuses to start
        return None
    return None if stream.isatty() or "COLUMNS" in os.environ else _PIPE_WIDTH


# file=None: rich writes to whatever sys.stdout is at print time (the CLI's guard while a command runs);
# emoji=False: a model named ``file.py:boom`` is printed as written, not with ":boom:" as an emoji
console = Console(width=_width(sys.stdout), emoji=False)
err_console = Console(stderr=True, width=_width(sys.stderr), emoji=False)


def flag(default: bool, *decls: str, help: str) -> OptionInfo:
    """A boolean flag option: it takes no value, so ``--help`` shows no ``<bool>`` type beside it."""
    return typer.Option(default, *decls, help=help, metavar="")


#: The largest seed torch takes (``torch.Generator.manual_seed``: an unsigned 64-bit int).
MAX_SEED = 2**64 - 1


@dataclass(frozen=True)
class AtMost:
    """The callback of a :func:`count_option`: a value above ``most`` is a usage error naming the option."""

    most: int

    def __call__(self, value: int | None) -> int | None:
        if value is not None and value > self.most:
            raise typer.BadParameter(f"{value} is more than {self.most}")
        return value


def count_option(default: int | None, *decls: str, help: str, max: int = MAX_COUNT, **kwargs) -> OptionInfo:
    """An integer option at most ``max`` (:data:`~surrobench.execution.config.MAX_COUNT` unless told), else a
    usage error (exit 2); lower bounds are the library's. A callback, not click's ``max``, which --help prints."""
    return typer.Option(default, *decls, help=help, callback=AtMost(max), **{"metavar": "INT", **kwargs})


ModelOpt = typer.Option(
    "fno2d",
    "--model",
    "-m",
    help="Zoo names, path/file.py:factory, package.module:factory or a .pt2 file; comma-separated (a factory's "
    "example inputs: docs/models.md, 'Your model').",
)
ShapeOpt = typer.Option("64", "--shape", help="Shape ladder: bare sizes (128,256) or full shapes (1x3x128x128).")
BatchOpt = typer.Option("1,4", "--batch", help="Batch list, e.g. 1,2,4,8.")
PrecisionOpt = typer.Option("fp32", "--precision", help=f"{', '.join(PRECISIONS)}; comma-separated, one per config.")
ModeOpt = typer.Option("eager", "--mode", help=f"{', '.join(MODES)}; comma-separated.")
DeviceOpt = typer.Option("auto", "--device", help="cpu, cuda or auto (cuda when available).")
WarmupOpt = count_option(MIN_WARMUP, "--warmup", help="Untimed iterations after the cold start.")
ItersOpt = count_option(
    DEFAULT_ITERS,
    "--iters",
    help=f"Timed iterations (at least {MIN_ITERS}; {MIN_SAMPLES_FOR_P95}+ for a trustworthy P95).",
)
SeedOpt = count_option(0, "--seed", help="Seed of weights and inputs.", max=MAX_SEED)
CudnnOpt = flag(False, "--cudnn-benchmark", help="torch.backends.cudnn.benchmark (recorded).")
InputSetsOpt = count_option(DEFAULT_INPUT_SETS, "--input-sets", help="Input buffers rotated through.")
RoundsOpt = count_option(
    1,
    "--rounds",
    help="Repeat the whole sweep this many times in one process and merge each "
    "config's rounds (spreads a slow spell of the host over configs; wider, honest CIs).",
)
ChannelsLastOpt = flag(False, "--channels-last", help="4-D inputs and weights in channels_last (NHWC) memory format.")
CompileModeOpt = typer.Option(
    None,
    "--compile-mode",
    help=f"torch.compile mode for --mode compile: {', '.join(COMPILE_MODES)}.",
)
ThreadsOpt = count_option(
    None, "--threads", help="torch.set_num_threads during each config (recorded as torch_threads)."
)
MatmulPrecisionOpt = typer.Option(
    None,
    "--matmul-precision",
    help=f"torch.set_float32_matmul_precision during each config: {', '.join(MATMUL_PRECISIONS)}.",
)
TimeoutOpt = typer.Option(
    None,
    "--timeout-s",
    help="Time limit per config, seconds: a config over it is stored as timeout with what it measured, "
    "and the sweep goes on (docs/cli.md, 'Time limits').",
)


def output_option(default: Path | None, *decls: str, help: str) -> OptionInfo:
    """An option naming a file the command writes (:data:`OUTPUT_FILE_FLAGS`, ``--db``); a value ending in ``/``
    is a usage error as the arguments are parsed, before the path loses its ``/``."""

    def parse(text: str | Path) -> Path:
        if isinstance(text, str) and text.endswith("/"):
            raise UsageError(f"{decls[0]} {text!r}: is a folder; give a file path")
        return Path(text)

    return typer.Option(default, *decls, help=help, parser=parse, metavar="<path>")


DbOpt = output_option(Path(DEFAULT_DB), "--db", help="SQLite results database.")
JsonOpt = output_option(None, "--json", help="Write the machine-readable result here.")
TagOpt = typer.Option(None, "--tag", help="Free-form label stored with the run.")
MarkdownOpt = output_option(None, "--markdown", help="Also write the table(s) as markdown here.")
TrustPickleOpt = flag(
    False,
    "--trust-pickle",
    help="Load a .pt2 whose weights, constants or inputs "
    "need unpickling (that can run code): only for files from a source you trust.",
)
NprocOpt = count_option(
    0,
    "--nproc",
    help="Start this many processes with torchrun, one per GPU (0: one process; "
    "under your own torchrun or srun the ranks are found in the environment).",
)
ParallelOpt = typer.Option(
    "auto",
    "--parallel",
    help="How the ranks share the work: replicas (each rank the same "
    "config), model (a factory taking `group` runs over all ranks), configs (the sweep dealt "
    "out); auto: model for distributed factories, else replicas.",
)
DevicesOpt = typer.Option(
    None,
    "--devices",
    help="GPU indices (0,1,...): spread the sweep's configs over them, one process per GPU, into the one database.",
)
ThresholdsOpt = typer.Option(None, "--config", help="TOML file overriding diagnosis thresholds.")
WorkersOpt = count_option(
    None,
    "--workers",
    min=1,
    help="Processes reading rank traces at once (default: one per core, as memory allows; 1: in this process).",
)
DaskSchedulerOpt = typer.Option(
    None,
    "--dask-scheduler",
    help="Read the rank traces on the workers of this Dask scheduler (tcp://host:8786) instead of local processes.",
)


def exit_if_configs_failed(results) -> None:
    """Exit with :data:`~surrobench.errors.EXIT_CONFIGS_FAILED` when a config ended ``oom``, ``error`` or ``timeout``;
    called last, after the run was stored and every output written."""
    if any(r.status != "ok" for r in results):
        raise typer.Exit(EXIT_CONFIGS_FAILED)


#: The flags naming a file a command writes, and a folder it fills; every other path a command takes it reads.
OUTPUT_FILE_FLAGS = frozenset({"--json", "--markdown", "--output", "--html"})
OUTPUT_FOLDER_FLAGS = frozenset({"--trace-out", "--flamegraph-out"})


def _appended(path: Path) -> bool:
    """Whether :func:`write_output` appends to ``path``: a device, a pipe, or a ``/dev`` link that leads elsewhere
    (``/dev/stdout`` redirected to a file the shell holds open)."""
    target = path.resolve()
    leads_out_of_dev = path.absolute().parts[:2] == ("/", "dev") and target != path.absolute()
    return leads_out_of_dev or (target.exists() and not target.is_file() and not target.is_dir())


def _read_paths(value: object) -> list[Path]:
    """The paths a read parameter's ``value`` names: a ``Path`` as given; of a text value, each existing file it
    names (a run JSON, the ``file.py`` of ``--model file.py:build,other``); of a list, those of each item."""
    if isinstance(value, (list, tuple)):
        return [path for item in value for path in _read_paths(item)]
    if isinstance(value, Path):
        return [value]
    if not isinstance(value, str):
        return []
    named = {piece.strip() for item in value.split(",") for piece in (item, item.rpartition(":")[0])}
    return [Path(name) for name in sorted(named) if name and Path(name).is_file()]


def _same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` are one file: one real path (links and ``..`` followed) or one inode."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return False


def _file_problem(path: Path) -> str | None:
    """Why the output file ``path`` cannot be written, or None. ``-`` is refused (read as the standard output by
    many tools); the folder is probed with a file, which finds a read-only file system ``os.access`` misses."""
    if str(path) == "-":
        return "give a file path; for the standard output, /dev/stdout"
    if path.is_dir():
        return "is a folder; give a file path"
    parent = path.absolute().parent
    blocking = next((p for p in (parent, *parent.parents) if p.exists()), None)
    if blocking is not None and not blocking.is_dir():
        return f"{str(blocking)!r} is a file, not a folder"
    if not parent.is_dir():
        return "parent folder does not exist"
    if path.exists() and not os.access(path, os.W_OK):
        return "cannot write (permission denied)"
    try:
        tempfile.NamedTemporaryFile(dir=parent, prefix=".surrobench-probe.").close()
    except OSError as exc:
        return f"cannot write in its folder ({exc.strerror or exc})"
    return None


def refuse_overwriting_inputs(ctx: typer.Context) -> None:
    """Refuse, before the command runs, an output file it cannot write (:func:`_file_problem`), and an output that
    is a path the command reads (the database, a trace, a run file, a model's file), lies inside a folder it reads,
    or is another output. An output appended to (a device, a pipe: :func:`_appended`) is not checked.

    Raises:
        UsageError: one line naming the option and the path (and the other option where two collide).
    """
    outputs: list[tuple[str, Path]] = []
    reads: list[tuple[str, Path]] = []
    for param in ctx.command.params:
        value = ctx.params.get(param.name)
        if value is None or isinstance(value, bool):
            continue
        name = next((o for o in param.opts if o.startswith("--")), str(param.name).upper())  # an argument: RUNS
        if name in OUTPUT_FOLDER_FLAGS and ctx.get_parameter_source(param.name).name == "DEFAULT":
            continue  # a default folder (./surrobench-traces) holds new files only: reading from it is no collision
        if name in OUTPUT_FILE_FLAGS | OUTPUT_FOLDER_FLAGS:
            outputs.append((name, Path(value)))
        else:
            reads += [(name, path) for path in _read_paths(value)]
    for i, (flag, path) in enumerate(outputs):
        if _appended(path):
            continue
        problem = _file_problem(path) if flag in OUTPUT_FILE_FLAGS else None
        if problem is not None:
            raise UsageError(f"{flag} {str(path)!r}: {problem}")
        for other, read in [*outputs[:i], *reads]:
            inside = read.is_dir() and Path(os.path.realpath(path)).is_relative_to(os.path.realpath(read))
            if inside or _same_file(path, read):
                where = "inside the folder" if inside else "the same file as"
                raise UsageError(
                    f"{flag} {str(path)!r} is {where} {other} {str(read)!r}: writing it would change what is read; "
                    f"give {flag} another path"
                )


def checked_command(command: Callable[..., None], markdown: Callable | None = None) -> Callable[..., None]:
    """``command`` as the app registers it: its outputs checked first (:func:`refuse_overwriting_inputs`), what it
    measured kept when its database fails (:func:`keep_unsaved`), an interrupted or stopped verb's ``partial``
    written to its ``--markdown`` (by ``markdown``, the command's document of a record) and ``--json``. The context:
    the command's own context parameter, else one added (typer fills one)."""
    own = inspect.signature(command, eval_str=True)
    params = [p if p.kind == p.KEYWORD_ONLY else p.replace(kind=p.KEYWORD_ONLY) for p in own.parameters.values()]
    name = next((p.name for p in params if p.annotation is typer.Context), None)
    if name is None:
        name = "_checked_context"
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context))

    @functools.wraps(command)
    def checked(**kwargs) -> None:
        ctx = kwargs[name] if name in own.parameters else kwargs.pop(name)
        refuse_overwriting_inputs(ctx)
        flagged = {opt: ctx.params.get(p.name) for p in ctx.command.params for opt in p.opts}
        json_out, md_out = flagged.get("--json"), flagged.get("--markdown")
        try:
            command(**kwargs)
        except Unsaved as exc:
            raise UsageError(keep_unsaved(exc, json_out)) from None
        except (Interrupted, Stopped) as cut:  # the one place a cut-short verb's partial documents are written
            if cut.partial is not None:
                if markdown is not None and md_out is not None:
                    write_output(md_out, markdown(cut.partial), "--markdown")
                write_json(json_out, cut.partial.to_json())
            raise

    return _signed(checked, own, params)


def _signed(wrapper: Callable, own: inspect.Signature, params: list[inspect.Parameter]) -> Callable:
    """``wrapper`` with the signature ``own`` of ``params`` (typer reads both signature and annotations)."""
    wrapper.__signature__ = own.replace(parameters=params)
    wrapper.__annotations__ = {p.name: p.annotation for p in params} | {"return": own.return_annotation}
    return wrapper


def keep_unsaved(exc: Unsaved, json_out: Path | None) -> str:
    """Write what a command measured but its database did not take (``exc.document``) to its ``--json``, else to a
    recovery file; the one line saying what failed, where the measurements are, and how to import them."""
    kept: Path | None = None
    if json_out is not None:
        with contextlib.suppress(UsageError):
            write_json(json_out, exc.document)
            kept = json_out
    if kept is None:
        kept = write_recovery(exc.document, exc.error.path, exc.record_id)
    if kept is None:
        return f"{exc}; they could not be written to any file either (beside the database, here, or in the temporary folder)"
    again = f"{invoked_as()} {shlex.join(['import', str(kept), '--db', exc.error.path])}"
    return f"{exc}: {exc.what} {exc.record_id} is kept in {str(kept)!r}; once the database can be written: {again}"


def write_output(path: Path | None, text: str, flag: str) -> None:
    """Write ``text`` (UTF-8) to the output file ``path`` given with ``flag``; no-op for None. A regular file is
    replaced through a temporary file beside it with the mode ``open()`` would give it; a device, a pipe or a
    ``/dev`` link elsewhere (:func:`_appended`) is appended to. A signal waits until it is written.

    Raises:
        UsageError: the write failed (no space left, I/O error), as one line.
    """
    if path is None:
        return
    with signals_deferred():
        _write_output(path, text, flag)


def _write_output(path: Path, text: str, flag: str, stored: str | None = None) -> None:
    data = text.encode("utf-8", "backslashreplace")  # a lone surrogate from a name cannot stop the write
    try:
        target = path.resolve()
        if _appended(path) or target.is_dir():
            sys.stdout.flush()  # what was printed comes first, when the path leads to the standard output
            with open(path, "ab") as stream:  # appended: truncating would cut what a redirected stdout holds
                stream.write(data)
            return
        mode = target.stat().st_mode & 0o7777 if target.exists() else None  # its own bits, else a new file's
        replace_file(target, data, mode)
    except OSError as exc:
        raise UsageError(
            f"{flag} {str(path)!r}: cannot write ({exc.strerror or exc}); nothing stored was lost"
            + (f": it is stored as {stored}, `{invoked_as()} show {stored}` prints it" if stored else "")
        ) from None


def write_json(path: Path | None, obj) -> None:
    """Write ``obj`` as indented JSON to ``path`` (no-op for None), as :func:`write_output`; its error names the run
    or optimization stored that the document holds (``run_id``, ``optimize_id``, a diagnosis's ``context.run_id``)."""
    if path is not None:
        stored = obj.get("run_id") or obj.get("optimize_id") or (obj.get("context") or {}).get("run_id")
        with signals_deferred():  # the document is built whole too
            _write_output(path, json.dumps(obj, indent=1) + "\n", "--json", stored)


def invoked_as(argv0: str | None = None, executable: str | None = None) -> str:
    """How to start surrobench again as the user did (``next:`` lines): ``surrobench`` where that name on PATH is
    this program, else the path as typed, and ``python -m surrobench`` (the interpreter by name on PATH, else by
    path) for a ``python -m`` start. ``argv0``, ``executable``: ``sys.argv[0]``, ``sys.executable`` by default."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    executable = sys.executable if executable is None else executable

    def same(name: str, path: str) -> bool:
        found = shutil.which(name)
        return found is not None and os.path.realpath(found) == os.path.realpath(path)

    if Path(argv0).name == "__main__.py" or argv0 in ("-m", "-c", ""):  # python -m surrobench
        name = Path(executable).name
        python = name if same(name, executable) else _relative(executable)
        return f"{shlex.quote(python)} -m surrobench"
    return "surrobench" if same("surrobench", argv0) else shlex.quote(argv0)


def _relative(path: str) -> str:
    """``path`` relative to the working folder where it lies under it (``.venv/bin/python``), else absolute."""
    try:
        return str(Path(path).absolute().relative_to(Path.cwd()))
    except ValueError:
        return str(Path(path).absolute())


def command_line() -> str:
    """The command as typed, stored with each run."""
    return " ".join(["surrobench", *sys.argv[1:]])


# Profiling options, shared by ``profile`` and ``run --profile torch`` (docs/sources.md, method §2).
PROFILERS = ("none", "torch", "perf", "nsys")
ProfileOpt = typer.Option(
    "none", "--profile", help="After timing, profile each config in a child process: none, torch, perf or nsys."
)
ProfileWaitOpt = count_option(DEFAULT_WAIT, "--profile-wait", help="Profiler schedule: steps skipped.")
ProfileWarmupOpt = count_option(
    DEFAULT_WARMUP, "--profile-warmup", help="Profiler schedule: steps profiled and discarded."
)
ProfileActiveOpt = count_option(DEFAULT_ACTIVE, "--profile-active", help="Profiler schedule: most steps recorded.")
WithStackOpt = flag(False, "--with-stack", help="Record Python stacks (more overhead).")
TraceOutOpt = typer.Option(
    Path("surrobench-traces"), "--trace-out", help="Folder for the Chrome traces, one per config."
)
TraceGzipOpt = flag(True, "--trace-gzip/--no-trace-gzip", help="Write traces as .json.gz (Perfetto opens both).")


# The system-level pass (``perf``, ``run --profile perf``; docs/sources.md, tools §1) and Nsight Systems (``--profile nsys``; method §3).
PerfWindowOpt = typer.Option(
    DEFAULT_WINDOW_S, "--perf-window-s", help="Seconds of measured steps under perf and py-spy."
)
FlamegraphOutOpt = typer.Option(
    Path("surrobench-flamegraphs"), "--flamegraph-out", help="Folder for the host flame graphs (SVG), one per config."
)
HostTopOpt = count_option(20, "--host-top", help="Host hot spots kept per sampler (py-spy, perf).")
CountersOpt = flag(
    False,
    "--counters",
    help="CUDA: also measure the step's top kernels under Nsight Compute (ncu): DRAM, pipes, occupancy.",
)
CudaMemoryUsageOpt = flag(False, "--cuda-memory-usage", help="nsys --cuda-memory-usage=true (adds overhead).")


def _declared(option: OptionInfo):
    """A field of an option group, declared by its typer option: the field's default is the CLI's."""
    return field(default=option.default, metadata={"option": option})


def _setting(option: OptionInfo):
    """A field of :class:`SettingsOptions`: listed in ``--help`` under "Execution settings", after the workload."""
    option.rich_help_panel = "Execution settings"
    return _declared(option)


@dataclass(frozen=True)
class SettingsOptions:
    """The execution settings (:class:`~surrobench.records.config.ExecSettings`) and cudnn.benchmark, named as the
    library takes them (``versus``; every :class:`WorkloadOptions` command): a new setting is a field here."""

    cudnn_benchmark: bool = _setting(CudnnOpt)
    channels_last: bool = _setting(ChannelsLastOpt)
    compile_mode: str | None = _setting(CompileModeOpt)
    threads: int | None = _setting(ThreadsOpt)
    matmul_precision: str | None = _setting(MatmulPrecisionOpt)


@dataclass(frozen=True)
class WorkloadOptions(SettingsOptions):
    """The workload and execution options (``run``, ``profile``, ``perf``, ``diagnose``, ``optimize``)."""

    model: str = _declared(ModelOpt)
    shape: str = _declared(ShapeOpt)
    batch: str = _declared(BatchOpt)
    precision: str = _declared(PrecisionOpt)
    mode: str = _declared(ModeOpt)
    device: str = _declared(DeviceOpt)
    warmup: int = _declared(WarmupOpt)
    iters: int = _declared(ItersOpt)
    seed: int = _declared(SeedOpt)
    input_sets: int = _declared(InputSetsOpt)
    tag: str | None = _declared(TagOpt)
    rounds: int = _declared(RoundsOpt)
    trust_pickle: bool = _declared(TrustPickleOpt)
    timeout_s: float | None = _declared(TimeoutOpt)

    def plan(self) -> SweepPlan:
        """The sweep planned once (:func:`surrobench.api.benchmark.sweep_plan`) for the command's library call; raises
        UsageError as :func:`~surrobench.api.benchmark.sweep_plan`."""
        from surrobench.api.benchmark import sweep_plan

        return sweep_plan(self.model, **self.sweep())

    def sweep(self) -> dict:
        """Every option but ``--model`` as the keywords of :func:`surrobench.api.benchmark.sweep_request` (too few
        iterations are among the run's warnings: :func:`~surrobench.execution.env.sweep_warnings`)."""
        return {_PLURAL.get(f.name, f.name): getattr(self, f.name) for f in fields(self) if f.name != "model"}

    def settings(self) -> dict:
        """The keywords of :meth:`sweep` but those of the sweep's own (``batches``, ``iters``, ``rounds``, ...), for
        the verbs that take one config without a sweep plan (``serve``, optimize's capacity objective)."""
        own = ("batches", "iters", "rounds", "trust_pickle", "timeout_s")
        return {name: value for name, value in self.sweep().items() if name not in own}


#: The library's plural name of each workload option that takes a list.
_PLURAL = {"shape": "shapes", "batch": "batches", "precision": "precisions", "mode": "modes"}


#: The workload options only ``run`` (and of them ``optimize``) takes; the profiling commands omit them.
SWEEP_ONLY = ("rounds",)


@dataclass(frozen=True)
class TraceOptions:
    """The profiler's schedule and trace output (``profile``, ``run --profile torch|nsys``, ``diagnose``)."""

    profile_wait: int = _declared(ProfileWaitOpt)
    profile_warmup: int = _declared(ProfileWarmupOpt)
    profile_active: int = _declared(ProfileActiveOpt)
    with_stack: bool = _declared(WithStackOpt)
    trace_out: Path = _declared(TraceOutOpt)
    trace_gzip: bool = _declared(TraceGzipOpt)
    cuda_memory_usage: bool = _declared(CudaMemoryUsageOpt)
    counters: bool = _declared(CountersOpt)

    def schedule(self, iters: int) -> ProfileSchedule:
        """The profiler schedule, checked against ``iters`` timed iterations.

        Raises:
            UsageError: zero active steps, a negative count, or a schedule longer than ``iters``.
        """
        plan = ProfileSchedule(self.profile_wait, self.profile_warmup, self.profile_active)
        plan.check(iters)
        return plan

    def torch(self, iters: int) -> ProfileOptions:
        """torch.profiler's options; creates the trace folder.

        Raises:
            UsageError: as :meth:`schedule`, or a trace folder that cannot be written.
        """
        plan, folder = self.schedule(iters), prepare_trace_dir(self.trace_out)
        return ProfileOptions(
            plan, with_stack=self.with_stack, trace_dir=folder, gzip=self.trace_gzip, counters=self.counters
        )

    def nsys(self, sweep: SweepPlan) -> NsysOptions:
        """Nsight Systems' options for the planned ``sweep``; creates the trace folder, checks ``nsys`` exists.

        Raises:
            UsageError: as :meth:`torch`, or ``nsys`` is missing (with the command to run where it is).
        """
        from surrobench.api.nsys import NsysOptions, require_nsys

        plan, folder = self.schedule(sweep.request.iters), prepare_trace_dir(self.trace_out)
        options = NsysOptions(plan, folder, self.cuda_memory_usage)
        require_nsys(sweep.configs[0], "nsys", options)
        return options


#: The trace options ``diagnose`` omits: it writes gzipped traces without stacks and never runs nsys.
TORCH_TRACE_ONLY = ("with_stack", "trace_gzip", "cuda_memory_usage")


@dataclass(frozen=True)
class SystemPassOptions:
    """The system-level pass under perf and py-spy (``perf``, ``run --profile perf``)."""

    perf_window_s: float = _declared(PerfWindowOpt)
    flamegraph_out: Path = _declared(FlamegraphOutOpt)
    host_top: int = _declared(HostTopOpt)

    def options(self) -> PerfOptions:
        """The pass's options; creates the flame graph folder.

        Raises:
            UsageError: a window of 0 s or less, ``--host-top`` < 1, or a folder that cannot be written.
        """
        if self.perf_window_s <= 0:
            raise UsageError(f"--perf-window-s {self.perf_window_s}: must be > 0")
        if self.host_top < 1:
            raise UsageError(f"--host-top {self.host_top}: keep at least 1 hot spot")
        folder = prepare_trace_dir(self.flamegraph_out, "--flamegraph-out")
        return PerfOptions(self.perf_window_s, folder, self.host_top)


def _is_group(annotation: object) -> bool:
    is_class = isinstance(annotation, type) and is_dataclass(annotation)
    return is_class and all("option" in f.metadata for f in fields(annotation))


def _group_parameters(group: type, omit: tuple[str, ...], helps: dict[str, str]) -> list[inspect.Parameter]:
    hints, out = get_type_hints(group), []
    for f in (f for f in fields(group) if f.name not in omit):
        option = copy.copy(f.metadata["option"])
        option.help = helps.get(f.name, option.help)
        out.append(inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=hints[f.name]))
    return out


def option_groups(
    omit: tuple[str, ...] = (), helps: dict[str, str] | None = None
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Decorate a command so that each parameter annotated with an option group (:class:`WorkloadOptions`, ...)
    stands for the group's options (but ``omit``; ``helps``: ``{field: the command's own help}``) in ``--help``;
    the command gets the group object.

    Raises:
        TypeError: the command has no option group, or ``omit`` names a field none of its groups has.
    """

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        own = inspect.signature(command, eval_str=True)
        groups = {p.name: p.annotation for p in own.parameters.values() if _is_group(p.annotation)}
        unknown = set(omit) - {f.name for group in groups.values() for f in fields(group)}
        if not groups or unknown:
            raise TypeError(f"{command.__name__}: no option group, or no such option to omit: {sorted(unknown)}")
        shared = {name: _group_parameters(group, omit, helps or {}) for name, group in groups.items()}
        params = [q for p in own.parameters.values() for q in shared.get(p.name, [p.replace(kind=p.KEYWORD_ONLY)])]

        @functools.wraps(command)
        def parsed(**kwargs) -> None:
            for name, group in groups.items():
                kwargs[name] = group(**{q.name: kwargs.pop(q.name) for q in shared[name]})
            command(**kwargs)

        return _signed(parsed, own, params)

    return decorate


def given_options(ctx: typer.Context, names: set[str]) -> list[str]:
    """The parameters of ``names`` given on the command line, in the command's order."""
    params = ctx.command.params
    return [p.name for p in params if p.name in names and ctx.get_parameter_source(p.name).name == "COMMANDLINE"]


def refuse_given(ctx: typer.Context, names: set[str], reason: str) -> None:
    """Raises UsageError (:meth:`~surrobench.errors.UsageError.not_applying`) naming the options of ``names`` given
    on the command line, ``reason`` why they do not apply."""
    if given := given_options(ctx, names):
        raise UsageError.not_applying(reason, given)


def print_warnings(warnings: Sequence[str], label: str = "warning") -> None:
    """Each warning on stderr as one ``label:`` line: wrapped on a terminal, never broken when piped (for grep)."""
    for warning in warnings:
        err_console.print(f"[yellow]{label}:[/yellow] {rich_escape(warning)}", soft_wrap=not err_console.is_terminal)


def profiled_out(done, db: Path, json_out: Path | None, shown: Iterable) -> None:
    """A :class:`~surrobench.records.run.Profile`'s ``--json`` first, then ``shown``, the failed configs, the
    warnings and where it was stored; exit :data:`~surrobench.errors.EXIT_CONFIGS_FAILED` when a config failed."""
    from surrobench.api.diagnose import failed_configs_json
    from surrobench.report.findings import failed_lines

    write_json(json_out, done.to_json())
    for renderable in (*shown, *failed_lines(failed_configs_json(done.run.results))):  # failed: as diagnose says it
        console.print(renderable)
    print_warnings(done.warnings)
    print_stored(db, done.run.run_id)
    exit_if_configs_failed(done.run.results)


def serve_out(record) -> None:
    """A serve record as ``serve`` prints it: its tables (or ``no load measured``), the best policy, the notes."""
    from surrobench.report.serve_tables import best_line, serve_tables

    for table in serve_tables(record, width=console.width) or ["no load measured"]:
        console.print(table)
    if line := best_line(record):
        console.print(rich_escape(line))
    print_warnings(record.notes)


def optimization_out(doc: dict, markdown: Path | None, json_out: Path | None, db: Path) -> None:
    """An optimize document's ``--markdown`` and ``--json`` first, then the terminal (command lines uncropped, one
    line to paste), its warnings before where it was stored in ``db`` (named when not the default). A capacity-v1
    document: its ``--json``, then its lines (:func:`~surrobench.report.optimize.capacity_lines`, in a code block
    as ``--markdown``); another verb's document (an interrupted optimize's partial): its ``--json`` alone."""
    from surrobench.api.compare import optimization_state
    from surrobench.report.optimize import capacity_lines, optimize_markdown, optimize_renderables

    if doc["schema"] != schemas.OPTIMIZE:
        lines = capacity_lines(CapacityOptimization.from_json(doc)) if doc["schema"] == schemas.CAPACITY else []
        write_output(markdown, "```\n" + "\n".join(lines) + "\n```\n", "--markdown")
        write_json(json_out, doc)
        for line in lines:
            console.print(line, markup=False)
        return
    where = None if db == Path(DEFAULT_DB) else str(db)
    state = optimization_state(doc, db)  # one not finished: still running, its process gone, or interrupted
    write_output(markdown, optimize_markdown(doc, where, state), "--markdown")
    write_json(json_out, doc)
    *configs, stored = optimize_renderables(doc, where, width=console.width, program=invoked_as(), state=state)
    for renderable in configs:
        console.print(renderable, crop=False)
    print_warnings(doc.get("warnings", []))
    console.print(stored, soft_wrap=True)


def print_stored(db: Path, run_id: str) -> None:
    """The line that says where the run was stored."""
    console.print(f"stored in {rich_escape(db)} as run {rich_escape(run_id)}")


# Options of the commands that compare two runs (``compare``, ``report``).
RunRefArg = "A run id (or unique prefix) in --db, or a run JSON file."
ThresholdOpt = typer.Option(
    DEFAULT_THRESHOLD, "--threshold", help="Practical threshold on the median-latency ratio, a fraction (0.02 = ±2%)."
)
IgnoreFieldOpt = typer.Option(
    None,
    "--ignore-field",
    help="Config fields left out of the match, comma-separated: precision, device, mode (e.g. mode for eager vs cudagraph).",
)
AllowEnvMismatchOpt = flag(
    False, "--allow-env-mismatch", help="Compare runs made on different devices (GPU or CPU model)."
)


@dataclass(frozen=True)
class MatchOptions:
    """How the configs of two runs are matched and judged (``compare``, ``report``)."""

    threshold: float = _declared(ThresholdOpt)
    allow_env_mismatch: bool = _declared(AllowEnvMismatchOpt)
    ignore_field: str | None = _declared(IgnoreFieldOpt)

    def keywords(self) -> dict:
        """The library's keywords: ``--ignore-field mode,precision`` as ``ignore_fields=("mode", "precision")``."""
        fields_ = tuple(f.strip() for f in (self.ignore_field or "").split(",") if f.strip())
        return dict(threshold=self.threshold, allow_env_mismatch=self.allow_env_mismatch, ignore_fields=fields_)


#: The flag of each library parameter whose flag is not ``--`` and its name with dashes (``budget_s``: ``--budget-s``).
FLAG_OF_PARAMETER = {
    **{plural: f"--{name}" for name, plural in _PLURAL.items()},
    "ignore_fields": "--ignore-field",
    "rates": "--rate",
    "arrivals_file": "--arrivals",
    "system": "--system-view",
    "system_pass": "--system",
    "trace": "TRACE",
    "then": "--profile",
    "gate": "--fail-on-regression",
    **{f"schedule.{f.name}": f"--profile-{f.name}" for f in fields(ProfileSchedule)},
}


def flag_for(parameter: str) -> str:
    """The command-line flag of the library parameter ``parameter`` (:data:`FLAG_OF_PARAMETER`)."""
    return FLAG_OF_PARAMETER.get(parameter, "--" + parameter.replace("_", "-"))


def usage_line(exc: UsageError) -> str:
    """A :class:`UsageError` as the CLI says it: each parameter it names by its flag (:func:`flag_for`), any other
    error as its message."""
    if exc.parameter is not None:
        return exc.named(flag_for(exc.parameter), flag_for)
    return exc.worded(flag_for) if exc.others else str(exc)
