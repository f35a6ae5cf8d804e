"""``versus``: is the surrogate faster than the solver it replaces, at the same accuracy? (``surrobench versus``)

The problem is an object, or ``path/file.py:factory`` / ``package.module:factory`` naming a function returning
one, with the members of docs/versus.md, "The problem" (:data:`REQUIRED` at least). The solver and the surrogate
are timed by the one timing core (:mod:`surrobench.execution.timing`); the surrogate in each mode and precision
as ``benchmark`` runs it (:func:`surrobench.execution.runner.config_step_of`). The rules (front, interpolation,
interval, crossover): :mod:`surrobench.analysis.versus`.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch

from surrobench.analysis import versus as rules
from surrobench.errors import UsageError
from surrobench.execution.config import MIN_ITERS, ExecConfig, check_ints, request_fields
from surrobench.execution.versus import time_solver, time_surrogate
from surrobench.records.versus import load_versus  # noqa: F401  (re-exported: surrobench.load_versus)
from surrobench.records.config import EXEC_SETTINGS
from surrobench.records.run import created_now
from surrobench.records.versus import Accuracy, SolverLevel, SurrogateResult, VersusRecord
from surrobench.workload.loader import _import_target, live_surrogate, resolve_model
from surrobench.workload.spec import ShapeSpec
from surrobench.workload.zoo import all_surrogates

REQUIRED = ("levels", "solve", "cases", "inputs")


def load_problem(problem: object, problem_args: dict | None = None) -> object:
    """``problem`` itself, or what the factory a ``file.py:factory`` / ``package.module:factory`` string names
    returns, called with ``problem_args``.

    Raises:
        UsageError: a spec that names no callable, a factory that raises, an object missing a required member.
    """
    if isinstance(problem, str):
        target, _, attr = problem.rpartition(":")
        if not target or not attr:
            raise UsageError.bad("problem", f"{problem}: expected path/file.py:factory or package.module:factory")
        try:
            module = _import_target(target)
        except UsageError as exc:
            raise UsageError.bad("problem", exc.detail or str(exc)) from None
        factory = getattr(module, attr, None)
        if not callable(factory):
            raise UsageError.bad("problem", f"{problem}: {target} has no callable {attr!r}")
        try:
            problem = factory(**(problem_args or {}))
        except Exception as exc:
            raise UsageError.bad(
                "problem", f"{attr}({problem_args or ''}) raised {type(exc).__name__}: {exc}"
            ) from None
    missing = [m for m in REQUIRED if not hasattr(problem, m)]
    if missing:
        raise UsageError.bad("problem", f"{type(problem).__name__} has no {', '.join(missing)} (docs/versus.md)")
    if len(list(problem.levels)) < 1:
        raise UsageError.bad("problem", "its ladder (levels) is empty")
    return problem


def _frames(value: torch.Tensor) -> np.ndarray:
    """A solution, ``(H, W)`` or ``(K, H, W)``, as ``(K, H, W)`` fp64 numpy."""
    array = value.detach().to("cpu", torch.float64).numpy()
    return array.reshape(-1, *array.shape[-2:])


def _accuracy(solutions: list[np.ndarray], references: list[np.ndarray]) -> Accuracy:
    """Errors of ``(K, H, W)`` solutions against references: the final frame's relative L2 per case (the horizon
    asked for), its mean, the bands of the final frame and the mean error at each frame."""
    per_step = np.array([[rules.relative_l2(s[k], r[k]) for k in range(len(r))] for s, r in zip(solutions, references)])
    finite = per_step if np.all(np.isfinite(per_step)) else np.full_like(per_step, np.inf)
    bands = [rules.band_errors(s[-1], r[-1]) for s, r in zip(solutions, references)]
    return Accuracy(
        error=float(np.mean(finite[:, -1])),
        case_errors=tuple(float(e) for e in finite[:, -1]),
        bands={b: float(np.mean([x[b] for x in bands])) for b in rules.BANDS},
        error_vs_step=tuple(float(e) for e in finite.mean(axis=0)),
    )


def _surrogate_of(problem, model) -> tuple[object, bool]:
    """The surrogate to time and whether its weights are declared untrained (the zoo's are random; a problem's
    ``trained`` attribute speaks for its own ``surrogate``)."""
    if model is None:
        factory = getattr(problem, "surrogate", None)
        if factory is None:
            raise UsageError.bad("model", "none given and the problem has no surrogate factory (docs/versus.md)")
        return live_surrogate(factory), getattr(problem, "trained", True) is False
    if isinstance(model, str):  # a zoo name: random weights
        return resolve_model(model), model in {s.info.name for s in all_surrogates()}
    return live_surrogate(model), False


def _refuse_untrained(label: str, error: float, trivial: float) -> None:
    """Raise :class:`UsageError` for a surrogate whose mean error is not below the trivial predictor's (zeros, or
    the input itself: :func:`surrobench.analysis.versus.trivial_errors`): it learnt nothing to match a solver at."""
    if not error < trivial:
        raise UsageError(
            f"surrogate {label}: its relative L2 error {error:.3g} is no better than a trivial predictor's "
            f"({trivial:.3g}, zeros or the input itself): an untrained surrogate has no accuracy to match; give "
            "trained weights"
        )


def versus(
    problem: object,
    model: object = None,
    *,
    problem_args: dict | None = None,
    cases: int = 8,
    seed: int = 0,
    device: str = "auto",
    precisions: str | tuple[str, ...] = "fp32",
    modes: str | tuple[str, ...] = "eager",
    batch: int = 8,
    warmup: int = 3,
    repeats: int = 5,
    amortize_calls: int = 1000,
    resamples: int = rules.CASE_RESAMPLES,
    **settings,
) -> VersusRecord:
    """Time and score the problem's solver ladder and the surrogate on the same cases, and compare them at equal
    accuracy and at equal runtime (McGreivy & Hakim 2024's rules; :mod:`surrobench.analysis.versus`).

    ``problem``: the problem (module docstring), or ``file.py:factory`` called with ``problem_args``; ``model``:
    the surrogate (None: the problem's ``surrogate``), a name, an ``nn.Module`` or a factory; ``cases`` from
    ``seed``, the same on both sides; ``precisions``, ``modes`` and ``settings`` (``channels_last``, ``compile_mode``,
    ``threads``, ``matmul_precision``, ``cudnn_benchmark``): as :func:`surrobench.benchmark` takes them, one result
    per precision x mode; ``batch``: the batched call; ``warmup``: untimed calls per level and setting; ``repeats``: timed calls per case (the surrogate
    at least :data:`~surrobench.execution.config.MIN_ITERS` in all); ``amortize_calls``: calls the one-time costs
    are spread over; ``resamples``: bootstrap resamples of the cases.

    Returns the :class:`~surrobench.records.versus.VersusRecord` (``surrobench/versus-v1``).

    Raises:
        UsageError: bad settings or problem; a surrogate declared untrained (a zoo name, ``problem.trained`` False)
            or measured no better than the trivial predictor (:func:`_refuse_untrained`), before the solver runs.
    """
    from surrobench.api.benchmark import check_keywords, sweep_request

    check_keywords(settings, (*EXEC_SETTINGS, "cudnn_benchmark"))
    check_ints(cases=cases, batch=batch, repeats=repeats, amortize_calls=amortize_calls, resamples=resamples)
    counts = (("cases", cases), ("batch", batch), ("repeats", repeats), ("amortize_calls", amortize_calls))
    for name, value in (*counts, ("resamples", resamples)):
        if value < 1:
            raise UsageError.bad(name, f"{value}: must be >= 1")
    if cases < 2:
        raise UsageError.bad("cases", f"{cases}: need at least 2 for an interval over cases")
    problem = load_problem(problem, problem_args)
    request = sweep_request(
        "versus",
        precisions=precisions,
        modes=modes,
        device=device,
        warmup=warmup,
        iters=max(MIN_ITERS, repeats * cases),
        seed=seed,
        **settings,
    )
    surrogate, declared_untrained = _surrogate_of(problem, model)
    label = f"{getattr(problem, 'name', 'problem')} surrogate" if model is None else surrogate.info.name
    if declared_untrained:
        raise UsageError(
            f"surrogate {label}: its weights are untrained (a zoo model, or the problem says trained=False): it has no "
            "accuracy to match; give trained weights (docs/versus.md)"
        )
    dev = request.device
    steps = int(getattr(problem, "steps", 1))
    case_list = list(problem.cases(cases, seed, dev))
    levels = [str(x) for x in problem.levels]
    reference_fn = getattr(problem, "reference", None)
    if reference_fn is None:
        if len(levels) < 2:
            raise UsageError.bad("problem", "no reference and a one-level ladder: nothing left to compare")
        reference_name, ladder = levels[-1], levels[:-1]
        references = [_frames(problem.solve(c, reference_name)) for c in case_list]
    else:
        reference_name, ladder = "reference", levels
        references = [_frames(reference_fn(c)) for c in case_list]
    trivial = rules.trivial_errors(
        [c.detach().to("cpu", torch.float64).numpy() if isinstance(c, torch.Tensor) else None for c in case_list],
        [r[-1] for r in references],
    )
    measured = []
    shape = ShapeSpec(full=tuple(problem.inputs(case_list[0])[0].shape))  # the label names the evaluation grid
    setting = dict(model=label, shape=shape, batch=batch, input_sets=len(case_list), **request_fields(request))
    for precision in request.precisions:
        for mode in request.modes:
            cfg = ExecConfig(precision=precision, mode=mode, **setting)
            run = time_surrogate(problem, surrogate, cfg, case_list, steps)
            accuracy = _accuracy(run["solutions"], references)
            _refuse_untrained(label, accuracy.error, trivial)
            measured.append((cfg, accuracy, run))
    solver = []
    for level in ladder:
        solutions, timing, batch_ms = time_solver(problem, case_list, level, dev, warmup, repeats, batch)
        solver.append((level, _accuracy([_frames(s) for s in solutions], references), timing, batch_ms))
    return _record(
        problem, dev, cases, seed, steps, reference_name, trivial, amortize_calls, resamples, batch, solver, measured
    )


def _record(
    problem, device, cases, seed, steps, reference_name, trivial, amortize_calls, resamples, batch, solver, measured
):
    """The record: the front, and each surrogate setting matched against it."""
    errors = np.array([a.error for _, a, _, _ in solver])
    times = np.array([t.median_ms for _, _, t, _ in solver])
    front = set(rules.pareto_front(errors, times).tolist())
    levels = tuple(
        SolverLevel(name, acc, timing, i in front, batch_ms) for i, (name, acc, timing, batch_ms) in enumerate(solver)
    )
    case_errors = np.array([a.case_errors for _, a, _, _ in solver])
    case_ms = np.array([t.case_ms for _, _, t, _ in solver])
    step_errors = np.array([a.error_vs_step for _, a, _, _ in solver])  # (L, K)
    batched = all(b is not None for _, _, _, b in solver)
    # per case in a batched call: the solver's batch is the surrogate's (both stack the first cases)
    batch_times = np.array([b / batch if b is not None else np.nan for _, _, _, b in solver])
    results = []
    for cfg, acc, run in measured:
        timing, one_time = run["timing"], run["one_time"]
        amortized = timing.median_ms + one_time.once_ms / amortize_calls
        step_matches = ()
        if steps > 1:  # a fixed-step solver's time grows with the simulated time: k/K of the horizon's
            per_step = timing.median_ms / steps
            step_matches = tuple(
                rules.match_error(acc.error_vs_step[k], per_step * (k + 1), step_errors[:, k], times * (k + 1) / steps)
                for k in range(steps)
            )
        results.append(
            SurrogateResult(
                label=replace(cfg, batch=1).label(),
                settings={"precision": cfg.precision, "mode": cfg.mode, **cfg.changed()},
                accuracy=acc,
                timing=timing,
                batch=run["batch"],
                batch_ms=run["batch_ms"],
                throughput_cases_per_s=run["throughput"],
                one_time=one_time,
                amortized_ms=amortized,
                match=rules.match_error(acc.error, timing.median_ms, errors, times),
                interval=rules.speedup_interval(
                    case_errors,
                    case_ms,
                    np.array(acc.case_errors),
                    np.array(timing.case_ms),
                    resamples=resamples,
                    seed=seed,
                ),
                time_match=rules.match_time(acc.error, timing.median_ms, errors, times),
                amortized_match=rules.match_error(acc.error, amortized, errors, times),
                crossover_level=rules.crossover_level(timing.median_ms, errors, times),
                step_matches=step_matches,
                crossover_step=rules.crossover_step(list(step_matches)) if step_matches else None,
                batch_match=rules.match_error(acc.error, run["batch_ms"] / run["batch"], errors, batch_times)
                if batched and run["batch"] == batch
                else None,
            )
        )
    return VersusRecord(
        problem=str(getattr(problem, "name", type(problem).__name__)),
        device=device,
        cases=cases,
        seed=seed,
        steps=steps,
        reference=reference_name,
        trivial_error=trivial,
        amortize_calls=amortize_calls,
        levels=levels,
        surrogates=tuple(results),
        created=created_now(),
        environment={"torch": torch.__version__, **({"gpu": torch.cuda.get_device_name()} if device == "cuda" else {})},
    )
