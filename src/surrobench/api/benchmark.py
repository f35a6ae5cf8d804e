"""``benchmark``: time a model over a shape ladder x batch list x precisions x modes (``surrobench run``).

A model is named as on the command line: a zoo name (``fno2d``), ``package.module:factory`` or
``path/file.py:factory`` (a function returning an ``nn.Module``), a ``torch.export`` ``.pt2`` file, or
``scenario:NAME``. ``benchmark`` also takes a model object, an ``nn.Module`` or a zero-argument function returning
one (:func:`surrobench.workload.loader.live_surrogate`); the verbs that profile take names only: their child
process rebuilds the model (never profiled in the process that times, docs/sources.md, method §5).
"""

from __future__ import annotations

import difflib
import inspect
import os
import warnings as _warnings
from collections.abc import Callable, Iterable, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import torch
from torch import nn

from surrobench.errors import UsageError
from surrobench.execution.config import DEFAULT_ITERS, MAX_COUNT, MIN_WARMUP, check_bools, check_ints, check_iterations
from surrobench.execution.deadline import check_timeout_s
from surrobench.execution.remedies import candidate_remedies
from surrobench.execution.runner import ModelOutputError, check_output, config_step, prepare_model
from surrobench.execution.sweep import SweepPlan, SweepRequest, execute_sweep, plan_sweep, resolve_device
from surrobench.records.config import EXEC_SETTINGS
from surrobench.records.run import RunRecord
from surrobench.results.store import ResultStore
from surrobench.workload.inputs import DEFAULT_INPUT_SETS
from surrobench.workload.loader import live_surrogate
from surrobench.workload.spec import ShapeSpec, parse_batches, parse_compile_mode, parse_modes, parse_precisions
from surrobench.workload.spec import parse_shapes
from surrobench.workload.zoo import all_surrogates, describe

#: ``shapes`` / ``batches`` / ``precisions`` / ``modes`` take a comma-separated string as on the command line
#: or a sequence; a shape item is a bare size (``128``), a full shape with the batch first (``(1, 3, 64, 64)``)
#: or a :class:`ShapeSpec`.
ShapesArg = str | int | Iterable[int | tuple[int, ...] | str | ShapeSpec] | None

#: A model: a name as on the command line (or several, a list or comma-separated), an ``nn.Module``, or a
#: zero-argument function returning one.
ModelArg = str | Iterable[str] | nn.Module | Callable[[], nn.Module]


def _text(value: str | int | Iterable, parameter: str) -> str:
    """A list option as its comma-separated text, as the parsers read it (a full shape's dims joined with ``x``).

    Raises:
        UsageError: an empty list, naming ``parameter``.
    """
    if isinstance(value, (str, int)):
        return str(value)
    items = [_item_text(v) for v in value]
    if not items:
        raise UsageError.bad(parameter, ": give at least one value")
    return ",".join(items)


def _item_text(item: int | tuple[int, ...] | str | ShapeSpec) -> str:
    if isinstance(item, ShapeSpec):
        return item.label()
    return "x".join(map(str, item)) if isinstance(item, (tuple, list)) else str(item)


def check_cpu_threads(threads: int) -> None:
    """Raises UsageError (naming ``threads``) above ``os.cpu_count()``: more intra-op threads than logical CPUs
    only contend, and tens of thousands exhaust OpenMP's memory."""
    cpus = os.cpu_count() or 1
    if threads > cpus:
        raise UsageError.bad("threads", f"{threads}: at most {cpus}, this machine's logical CPU count (os.cpu_count())")


def sweep_request(
    model: str | Iterable[str],
    *,
    shapes: ShapesArg = None,
    batches: str | int | Iterable[int] = 1,
    precisions: str | Iterable[str] = "fp32",
    modes: str | Iterable[str] = "eager",
    device: str = "auto",
    warmup: int = MIN_WARMUP,
    iters: int = DEFAULT_ITERS,
    seed: int = 0,
    cudnn_benchmark: bool = False,
    input_sets: int = DEFAULT_INPUT_SETS,
    tag: str | None = None,
    rounds: int = 1,
    channels_last: bool = False,
    compile_mode: str | None = None,
    threads: int | None = None,
    trust_pickle: bool = False,
    timeout_s: float | None = None,
    **settings,
) -> SweepRequest:
    """Validate and parse a sweep into a :class:`SweepRequest` (models resolved and shapes checked by
    :func:`sweep_plan`). ``shapes`` None: each model's default size. ``device``: ``cpu``, ``cuda`` or ``auto``. A
    model named twice runs once. ``trust_pickle``: a ``.pt2`` file may unpickle (can run code: trusted files only).
    ``timeout_s``: each config's limit, s; a config over it is recorded ``timeout`` with what it measured, and the
    sweep goes on (:mod:`surrobench.execution.deadline`). ``settings``: the other fields of
    :class:`~surrobench.records.config.ExecSettings` (``matmul_precision``), checked there.

    Raises:
        TypeError: a keyword that is no setting.
        UsageError: an integer option that is not an ``int`` (``iters="5"``, ``iters=2.5``, ``True``), a boolean one
            (``cudnn_benchmark``, ``channels_last``, ``trust_pickle``) that is not a ``bool``, malformed lists,
            ``iters`` < 1, ``warmup`` < 0, ``warmup`` / ``iters`` / ``rounds`` above
            :data:`~surrobench.execution.config.MAX_COUNT`, ``input_sets`` / ``rounds`` / ``threads`` < 1, ``threads``
            above ``os.cpu_count()`` (:func:`check_cpu_threads`), more ``input_sets`` than the calls that read them, a
            ``seed`` outside [0, 2**64), a ``timeout_s`` that is not a finite number > 0 or is given outside the main
            thread, no GPU for cuda, a setting of a remedy not for the device (``tf32``, ``fp16``, ``cudagraph``,
            ``cudnn_benchmark`` on the CPU), ``compile_mode`` without the ``compile`` mode.
    """
    check_ints(warmup=warmup, iters=iters, seed=seed, input_sets=input_sets, rounds=rounds, threads=threads)
    check_iterations(warmup=warmup, iters=iters)
    for name, value in (("input_sets", input_sets), ("rounds", rounds), ("threads", threads)):
        if value is not None and value < 1:
            raise UsageError.bad(name, f"{value}: must be >= 1")
    if rounds > MAX_COUNT:
        raise UsageError.bad("rounds", f"{rounds}: at most {MAX_COUNT}")
    if threads is not None:
        check_cpu_threads(threads)
    # sets beyond the calls that read them (cold start + warm-up + timed) are never used, only allocated
    most_sets = max(DEFAULT_INPUT_SETS, 1 + warmup + iters)
    if input_sets > most_sets:
        raise UsageError.bad("input_sets", f"{input_sets}: at most {most_sets} (1 + warmup + iters calls read them)")
    if not 0 <= seed < 2**64:
        raise UsageError.bad("seed", f"{seed}: must be in [0, 2**64) (torch.Generator.manual_seed)")
    check_bools(cudnn_benchmark=cudnn_benchmark, channels_last=channels_last, trust_pickle=trust_pickle)
    check_timeout_s(timeout_s)
    mode_list = tuple(parse_modes(_text(modes, "modes")))
    parse_compile_mode(compile_mode)  # an unknown mode is named as such before its placement is judged
    if compile_mode is not None and "compile" not in mode_list:
        raise UsageError.bad("compile_mode", f"{compile_mode}: applies to the compile mode only")
    names = model.split(",") if isinstance(model, str) else model
    models = tuple(dict.fromkeys(m.strip() for m in names if m.strip()))
    if not models:
        raise UsageError.bad("model", ": give at least one model (see `surrobench models`)")
    request = SweepRequest(
        models=models,
        shapes=None if shapes is None else tuple(parse_shapes(_text(shapes, "shapes"))),
        batches=tuple(parse_batches(_text(batches, "batches"))),
        precisions=tuple(parse_precisions(_text(precisions, "precisions"))),
        modes=mode_list,
        device=resolve_device(device),
        warmup=warmup,
        iters=iters,
        seed=seed,
        cudnn_benchmark=cudnn_benchmark,
        input_sets=input_sets,
        tag=tag,
        rounds=rounds,
        channels_last=channels_last,
        compile_mode=parse_compile_mode(compile_mode),
        threads=threads,
        trust_pickle=trust_pickle,
        timeout_s=timeout_s,
        **settings,
    )
    asked = {("cudnn_benchmark", cudnn_benchmark): "cudnn_benchmark"} | {("mode", m): "modes" for m in mode_list}
    asked |= {("precision", p): "precisions" for p in request.precisions}  # a compile mode is warned of: it runs
    for remedy in candidate_remedies(request.device):  # what runs on a device: optimize's rule, a remedy's devices
        if request.device not in remedy.devices and set(remedy.settings) <= asked.keys():
            value, summary = remedy.settings[0][1], remedy.summary
            detail = f"{'' if value is True else f'{value} '}needs {{device}} {' or '.join(remedy.devices)} ({summary})"
            raise UsageError.bad(asked[remedy.settings[0]], detail, others=("device",))
    return request


def is_model_object(model: ModelArg) -> bool:
    """Whether ``model`` is a model object (an ``nn.Module`` or a factory function), not a name or a list."""
    return not isinstance(model, str) and callable(model)


def check_keywords(given: Iterable[str], known: Sequence[str]) -> None:
    """Raise :class:`UsageError` for the first of ``given`` not in ``known``: ``unknown setting 'shape' (did you
    mean shapes?)``, or the known ones when none is close (:func:`difflib.get_close_matches`)."""
    for name in given:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"did you mean {close[0]}?" if close else f"known: {', '.join(known)}"
            raise UsageError(f"unknown setting {name!r} ({hint})")


def sweep_plan(model: ModelArg, *, caller: Callable | None = None, **sweep) -> SweepPlan:
    """Parse the sweep (keywords of :func:`sweep_request`) and plan it once (:func:`plan_sweep`; a model object run
    once, :func:`check_forward`), so bad input fails before anything is timed. ``caller``: the verb whose
    ``**sweep`` this is, whose own keywords are suggested too for an unknown one.

    Raises:
        UsageError: a keyword :func:`sweep_request` does not take, as :func:`sweep_request`, unknown models,
            shapes that do not fit a model, a model object whose forward fails on the inputs built for it.
    """
    own = list(inspect.signature(caller).parameters) if caller is not None else []
    known = [
        n
        for n in [*inspect.signature(sweep_request).parameters, *EXEC_SETTINGS, *own]
        if n not in ("model", "sweep", "settings")
    ]
    check_keywords(sweep, list(dict.fromkeys(known)))
    if isinstance(model, Iterable) and not is_model_object(model):  # a name (a str) or a list of names
        names = model if isinstance(model, str) else list(model)
        if not all(isinstance(name, str) for name in names):
            raise UsageError("model: a list holds names only; give one model object per call")
        return plan_sweep(sweep_request(names, **sweep))
    surrogate = live_surrogate(model)  # a UsageError for what is neither a name nor a model
    name = surrogate.info.name
    plan = plan_sweep(sweep_request(name, **sweep), given={name: surrogate})
    check_forward(plan, name)
    return plan


def named_model(model: ModelArg, verb: str) -> None:
    """Refuse a model object where the model must be rebuilt in a child process (profiling).

    Raises:
        UsageError: ``model`` is an ``nn.Module`` or a factory function.
    """
    if is_model_object(model):
        raise UsageError(
            f"{verb} runs each config in a child process, which rebuilds the model from its name: give a zoo "
            "name, 'path/file.py:factory' or a torch.export .pt2 file, not a model object (benchmark takes one)"
        )


def check_forward(plan: SweepPlan, spec: str) -> None:
    """One eager fp32 forward of ``spec`` on its first config's inputs, so a forward that does not take them fails
    before anything is timed, not as an error row per config (out of memory is left to the sweep).

    Raises:
        UsageError: the forward raises (the message suggests other shapes or an ``example_inputs``), or returns
            no tensor (None, a string, ...: the message says so).
    """
    cfg = next(c for c in plan.configs if c.model == spec)
    cfg = replace(cfg, mode="eager", precision="fp32", input_sets=1, channels_last=False)
    prepared = prepare_model(plan.surrogates[spec], cfg.device, cfg.seed, "no_grad")  # the sweep decides its own
    with config_step(cfg, prepared) as (step, input_sets):
        shapes = ", ".join("x".join(map(str, t.shape)) for t in input_sets[0])
        try:
            output = step(0)
        except torch.OutOfMemoryError:
            return
        except (Exception, SystemExit) as exc:
            reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
            raise UsageError(
                f"model {spec}: forward fails on the inputs built for it ({shapes}): {reason}; give shapes= that "
                "fit it, or an example_inputs(batch, shape) method returning its inputs"
            ) from None
        try:
            check_output(output)
        except ModelOutputError as exc:
            raise UsageError(f"model {spec}: the forward ran on {shapes} but {exc}: there is nothing to time") from None


@contextmanager
def open_store(db: str | Path | None):
    """The results database ``db``, or an in-memory one when ``db`` is None (nothing written to disk).

    Raises:
        UsageError: ``db`` is neither a path (str or Path) nor None (``db=5`` would create a file named 5).
    """
    if db is not None and not isinstance(db, (str, Path)):
        raise UsageError.bad("db", f"{db!r}: a database path (str or pathlib.Path) or None, not {type(db).__name__}")
    with ResultStore(":memory:" if db is None else db) as store:
        yield store


def benchmark(model: ModelArg, *, db: str | Path | None = None, **sweep) -> RunRecord:
    """Time ``model`` over the sweep (``sweep``: the keywords of :func:`sweep_request`) and return the run, stored in
    the SQLite file ``db`` (None: nothing written). ``model``: a name or a model object (module docstring; an
    ``nn.Module`` is timed on a copy, named by its class). Its inputs: its ``example_inputs(batch, shape)``, else
    fp32 randn of each full shape or ``(B, 3, N, N)`` for a bare size N. The sweep's warnings are issued
    as :class:`UserWarning`; a config that fails is recorded ``oom``, ``error``, ``nonfinite`` or ``timeout``.

    Raises:
        UsageError: bad input (:func:`sweep_plan`).
        Unsaved: a write to ``db`` failed (disk full, locked, read-only); its ``document`` is the run JSON of every
            config measured, for :func:`surrobench.import_run` once the database can be written.
    """
    plan = sweep_plan(model, caller=benchmark, **sweep)
    with open_store(db) as store:
        record, notes = execute_sweep(plan, store)
    for note in notes:
        _warnings.warn(note, UserWarning, stacklevel=2)
    return record


def models() -> list[dict]:
    """The zoo's reference surrogates, one dict each (name, paper, input layout, parameter count, point kind,
    default size: :func:`surrobench.workload.zoo.describe`). Behind ``surrobench models``."""
    return [describe(s) for s in all_surrogates()]
