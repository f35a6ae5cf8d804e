"""A whole sweep: the request planned once into configs (:func:`plan_sweep`), preflighted, run, each stored as it
finishes. Every later stage finds a result's config in the plan by its identity, never by list position.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import itertools
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Protocol

import torch

from surrobench.errors import Interrupted, StoreWriteError, Unsaved, UsageError
from surrobench.execution.config import ExecConfig, request_fields, tf32_enabled
from surrobench.execution.env import fingerprint, gpu_readings, sweep_warnings
from surrobench.execution.memory import available_bytes
from surrobench.execution.runner import PreparedModel, failed_result, merge_rounds, planned_inputs, prepare_model
from surrobench.execution.runner import run_config
from surrobench.records.config import ExecSettings
from surrobench.records.run import ConfigResult, RunRecord, created_now
from surrobench.records.vocab import DEVICES
from surrobench.workload.loader import resolve_model
from surrobench.workload.spec import ShapeSpec
from surrobench.workload.zoo.base import Surrogate


class RunSink(Protocol):
    """Where a sweep commits its run as it goes (:class:`surrobench.results.store.ResultStore`); a failed write
    raises :class:`~surrobench.errors.StoreWriteError`."""

    def begin_run(self, run: RunRecord, command: str | None = None) -> None: ...

    def add_result(self, run_id: str, r: ConfigResult) -> int: ...

    def update_env(self, run_id: str, env: dict) -> None: ...

    def finish_run(self, run_id: str, state: str = "complete") -> None: ...


def _ignore(*args) -> None:
    return None


@dataclass(frozen=True)
class Hooks:
    """Progress callbacks, all optional: ``on_start(total)`` before timing (configs x rounds), ``on_result(result)``
    per timed round of a config, ``on_profile_start(n)`` before profiling ``n`` configs, ``on_report(report)``."""

    on_start: Callable[[int], None] = _ignore
    on_result: Callable[[ConfigResult], None] = _ignore
    on_profile_start: Callable[[int], None] = _ignore
    on_report: Callable[[object], None] = _ignore


NO_HOOKS = Hooks()


@dataclass(frozen=True)
class SweepRequest(ExecSettings):
    """What the user asked for (settings: :class:`~surrobench.records.config.ExecSettings`); ``shapes`` None:
    each model's default size."""

    models: tuple[str, ...]
    shapes: tuple[ShapeSpec, ...] | None
    batches: tuple[int, ...]
    precisions: tuple[str, ...]
    modes: tuple[str, ...]
    device: str
    warmup: int
    iters: int
    seed: int
    cudnn_benchmark: bool
    input_sets: int
    tag: str | None = None
    rounds: int = 1
    trust_pickle: bool = False
    timeout_s: float | None = None  # each config's time limit (execution.deadline); None: none


def interrupted_message(record: RunRecord, total: int) -> str:
    """``interrupted: K of N configs stored as run R``: ``record``'s configs committed, of ``total``, the cut named."""
    short = record.short_of_rounds
    rounds = f" ({short} with fewer rounds than asked)" if short else ""
    for r in (r for r in record.results if r.status == "interrupted"):  # its calls timed before the signal
        rounds += f", {r.label()} cut after {r.extra['timed_calls']} of {r.iters} timed calls"
    return f"interrupted: {len(record.results)} of {total} configs stored{rounds} as run {record.run_id}"


class SweepInterrupted(Interrupted):
    """Ctrl-C during a sweep: ``record`` the configs committed before it (stored ``interrupted``), of ``total``."""

    def __init__(self, record: RunRecord, total: int) -> None:
        super().__init__(interrupted_message(record, total), record)
        self.record = record


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when a GPU is visible, else ``cpu``.

    Raises:
        UsageError: ``cuda`` requested where torch sees no GPU.
    """
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise UsageError.bad("device", "cuda: torch sees no CUDA GPU here (torch.cuda.is_available() is False)")
    if device not in DEVICES:
        raise UsageError.bad("device", f"{device!r}: choose cpu, cuda or auto")
    return device


@dataclass(frozen=True)
class SweepPlan:
    """A request expanded into its configs (sweep order), each model resolved once; ``surrogates`` must not be
    mutated."""

    request: SweepRequest
    configs: tuple[ExecConfig, ...]
    surrogates: Mapping[str, Surrogate]

    @functools.cached_property
    def _by_identity(self) -> dict[tuple, ExecConfig]:
        """Each config by what names it within the plan: the rung as written, not the executed shape
        (:class:`~surrobench.records.config.ConfigKey`), which a config that failed before its inputs lacks."""
        return {(c.model, c.shape.label(), c.batch, c.precision, c.device, c.mode): c for c in self.configs}

    def config_for(self, result: ConfigResult) -> ExecConfig:
        """The planned config that ``result`` measured.

        Raises:
            KeyError: ``result`` is not a config of this plan.
        """
        identity = (result.model, result.shape_label, result.batch, result.precision, result.device, result.mode)
        try:
            return self._by_identity[identity]
        except KeyError:
            raise KeyError(f"{result.label()} is not a config of this sweep plan") from None


def plan_sweep(request: SweepRequest, given: Mapping[str, Surrogate] | None = None) -> SweepPlan:
    """The request's configs (model, precision, mode, shape, batch order), each checked by :func:`check_input_size`
    (a compile mode set on the compile configs alone: ``--mode eager,compile`` has an eager config with none);
    ``given``: models already resolved, by their name in ``request.models``.

    Raises:
        UsageError: unknown model, a shape or batch that does not fit a model.
    """
    given = given or {}
    surrogates = {spec: given.get(spec) or resolve_model(spec, request.trust_pickle) for spec in request.models}
    configs: list[ExecConfig] = []
    free, batches = available_bytes(request.device), request.batches
    fields = {**request_fields(request), "input_sets": request.input_sets, "trust_pickle": request.trust_pickle}
    own = {m: {**fields, "compile_mode": fields["compile_mode"] if m == "compile" else None} for m in request.modes}
    for spec, surrogate in surrogates.items():
        shapes = request.shapes or (ShapeSpec(size=surrogate.info.default_size),)
        for shape in shapes:
            for batch in request.batches:
                check_input_size(spec, surrogate, shape, batch, request.input_sets, free)
        configs += [
            ExecConfig(model=spec, shape=shape, batch=batch, precision=precision, mode=mode, **own[mode])
            for precision, mode, shape, batch in itertools.product(request.precisions, request.modes, shapes, batches)
        ]
    return SweepPlan(request, tuple(configs), surrogates)


def _bytes_text(n: int) -> str:
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} bytes"


def check_input_size(
    spec: str,
    surrogate: Surrogate,
    shape: ShapeSpec,
    batch: int,
    input_sets: int,
    free: int,
    batch_name: str = "batches",
) -> None:
    """Check that ``(spec, shape, batch)`` fits the model and ``input_sets`` input sets fit in ``free`` bytes
    (inputs made on the ``meta`` device); ``batch_name``: the parameter the error names for the batch.

    Raises:
        UsageError: a shape that does not fit the model, a tensor torch cannot size (element count over
            int64), or input sets larger than the memory available now.
    """
    where = f"model {spec}, shape {shape.label()}, batch {batch}"
    try:
        inputs = surrogate.example_inputs(
            batch, shape, generator=torch.Generator().manual_seed(0), device=torch.device("meta")
        )
    except NotImplementedError:
        return  # the inputs need data (``Cannot copy out of meta tensor``); the run records an OOM if too large
    except (RuntimeError, ValueError, OverflowError) as exc:
        reason = " ".join(str(exc).split())[:200]
        text = f"{where}: inputs of that size cannot be made ({reason}); lower {{shapes}} or {{{batch_name}}}"
        raise UsageError.naming(text, ("shapes", batch_name)) from None
    need = input_sets * sum(t.numel() * t.element_size() for t in inputs)
    if need > free:
        lower = (
            f"{{shapes}}, {{{batch_name}}} or {{input_sets}}" if input_sets > 1 else f"{{shapes}} or {{{batch_name}}}"
        )
        detail = f": {where}: {input_sets} input set(s) need {_bytes_text(need)}, more than the {_bytes_text(free)} "
        detail += f"available; lower {lower}"
        raise UsageError.bad("shapes", detail, others=("shapes", batch_name, "input_sets"))


def new_run_id() -> str:
    """Sortable, readable, unique enough: ``20261130-142501-3fa2``."""
    return f"{dt.datetime.now():%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


def run_environment(request: SweepRequest) -> dict:
    """The run's ``env``: the device's :func:`~surrobench.execution.env.fingerprint` and the run-wide settings."""
    env = fingerprint(request.device, request.threads)
    env["cudnn_benchmark"] = request.cudnn_benchmark
    env["rounds"] = request.rounds
    env["tf32_by_precision"] = {p: tf32_enabled(p) for p in request.precisions}
    return env


def execute_sweep(
    plan: SweepPlan,
    store: RunSink,
    *,
    command: str | None = None,
    kind: str | None = None,
    hooks: Hooks = NO_HOOKS,
    finish: bool = True,
) -> tuple[RunRecord, list[str]]:
    """Run the planned sweep: the run committed first (``kind``: its ``env["command_kind"]``), each config after its
    last round, then marked ``complete`` (``running`` with ``finish`` False). ``request.rounds`` > 1 repeats the whole
    sweep, each config's rounds merged, ``hooks`` told as :class:`Hooks` says. Returns the run, :func:`sweep_warnings`.

    Raises:
        SweepInterrupted: Ctrl-C (or SIGTERM, SIGHUP); the configs committed stay stored, the run ``interrupted``.
        Unsaved: a write to ``store`` failed; it carries every config measured (:func:`unsaved`).
    """
    request, configs, surrogates = plan.request, plan.configs, plan.surrogates
    env = run_environment(request) | ({"command_kind": kind} if kind else {})
    run = RunRecord(new_run_id(), created_now(), request.tag, env)
    store.begin_run(run, command)
    prepared: dict[str, PreparedModel | BaseException] = {}

    def measure(cfg: ExecConfig) -> ConfigResult:
        if cfg.model not in prepared:
            prepared.clear()  # one model resident at a time
            try:
                prepared[cfg.model] = prepare_model(surrogates[cfg.model], request.device, request.seed)
            except (Exception, SystemExit) as exc:  # UsageError of a raising factory included
                prepared[cfg.model] = exc
        model = prepared[cfg.model]
        if isinstance(model, BaseException):
            return failed_result(cfg, "error", model, planned_inputs(cfg, surrogates[cfg.model]))
        return run_config(cfg, model, timeout_s=request.timeout_s)

    hooks.on_start(len(configs) * request.rounds)
    results: list[ConfigResult] = []
    try:
        _run_rounds(request.rounds, run.run_id, store, configs, measure, hooks.on_result, results)
        if request.device == "cuda":
            env["gpu_clocks"]["after"] = gpu_readings()
            store.update_env(run.run_id, env)
        if finish:
            store.finish_run(run.run_id)
    except KeyboardInterrupt:
        raise SweepInterrupted(mark_interrupted(store, replace(run, results=tuple(results))), len(configs)) from None
    except StoreWriteError as exc:
        raise unsaved(store, replace(run, env=env, results=tuple(results)), exc, len(configs)) from None
    return replace(run, env=env, results=tuple(results)), sweep_warnings(results, env)


def mark_interrupted(store: RunSink, record: RunRecord) -> RunRecord:
    """``record`` marked ``interrupted`` in ``store`` and in its env, as ``--json`` has it (``show`` says so)."""
    store.finish_run(record.run_id, "interrupted")
    store.update_env(record.run_id, env := {**record.env, "interrupted": True})
    return replace(record, env=env)


def mark_unsaved(store: RunSink, *run_ids: str) -> None:
    """Mark the runs ``unsaved`` after a write failed, where the database still takes that write."""
    for run_id in run_ids:
        with contextlib.suppress(StoreWriteError):
            store.finish_run(run_id, "unsaved")


def unsaved_env(env: dict, error: StoreWriteError, planned: int | None = None) -> dict:
    """``env`` with how its run ended when a write failed, as its document keeps it for ``import``: ``unsaved``,
    ``{"cause": error.cause, "planned": the configs (or load points) it meant to measure, None: not known}``."""
    return {**env, "unsaved": {"cause": error.cause, "planned": planned}}


def unsaved(store: RunSink, record: RunRecord, error: StoreWriteError, planned: int) -> Unsaved:
    """The :class:`~surrobench.errors.Unsaved` of a run of ``planned`` configs whose write failed; ``record`` holds
    everything measured, its env :func:`unsaved_env`."""
    mark_unsaved(store, record.run_id)
    doc = replace(record, env=unsaved_env(record.env, error, planned)).to_json()
    stored = sum(r.config_id is not None for r in record.results)
    return Unsaved(error, doc, record.run_id, len(record.results), stored=stored)


def _run_rounds(
    n_rounds: int,
    run_id: str,
    store: RunSink,
    configs: tuple[ExecConfig, ...],
    measure: Callable[[ExecConfig], ConfigResult],
    on_result: Callable[[ConfigResult], None],
    results: list[ConfigResult],
) -> None:
    """Every round of every config, each committed (and appended to ``results``, empty before) after its last round. On
    Ctrl-C or a failed commit, each uncommitted config with a round is kept (``extra["rounds_planned"]`` when
    short): committed, or after a failed write without a ``config_id``; the exception goes on. The config Ctrl-C
    cut in its first round is kept with the calls timed before it (``run_config``'s ``cut_result``)."""
    rounds: list[list[ConfigResult]] = [[] for _ in configs]

    def merged(done: list[ConfigResult]) -> ConfigResult:
        result = merge_rounds(done)
        short = {"rounds": len(done), "rounds_planned": n_rounds} if len(done) < n_rounds else {}
        return replace(result, extra={**result.extra, **short})

    def commit(done: list[ConfigResult]) -> None:
        result = merged(done)
        results.append(replace(result, config_id=store.add_result(run_id, result)))

    try:
        for round_index in range(n_rounds):
            final = round_index == n_rounds - 1
            for cfg, done in zip(configs, rounds):
                done.append(measure(cfg))
                on_result(done[-1])
                if final:
                    commit(done)
    except (KeyboardInterrupt, StoreWriteError) as exc:
        if hasattr(exc, "cut_result") and not done:
            done.append(exc.cut_result)
        for done in rounds[len(results) :]:  # those not committed: results holds the committed, in order
            if done and isinstance(exc, KeyboardInterrupt):
                commit(done)
            elif done:
                results.append(merged(done))
        raise
