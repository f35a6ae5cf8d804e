"""The timed calls of ``versus`` (:mod:`surrobench.api.versus`): a solver level and a surrogate setting on the same
cases, through the one timing core and, for the surrogate, the mode's own step.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from surrobench.execution.config import MIN_ITERS, ExecConfig, execution_settings
from surrobench.execution.runner import config_step_of, in_grad_mode, prepare_model
from surrobench.execution.timing import measure_round, time_loop, time_once
from surrobench.records.stats import bootstrap_ci
from surrobench.records.versus import OneTimeCosts, Timing

#: Calls of ``h2d_ms``'s copy timed (its median is kept).
H2D_CALLS = 10


def case_timing(latency_ms: np.ndarray, n_cases: int, scale: float = 1.0) -> Timing:
    """Calls that cycled through ``n_cases`` cases, times ``scale`` (a rollout's forwards): each case's median, their
    median (:func:`surrobench.analysis.versus.aggregate`) and its percentile-bootstrap interval over cases."""
    x = np.asarray(latency_ms) * scale
    per_case = np.array([np.median(x[c::n_cases]) for c in range(n_cases)])
    return Timing(float(np.median(per_case)), bootstrap_ci(per_case), tuple(per_case.tolist()))


def time_solver(
    problem, cases: list, level: str, device: str, warmup: int, repeats: int, batch: int
) -> tuple[list, Timing, float | None]:
    """One level: a first call per case (its solution kept, untimed), ``warmup`` more, ``repeats`` timed calls per
    case through :func:`time_loop`; for a ``batched`` problem, then its calls on ``batch`` stacked cases (median
    ms per call, else None)."""
    n = len(cases)

    def step(i: int):
        return problem.solve(cases[i % n], level)

    solutions = [step(i) for i in range(n)]
    samples = measure_round(step, warmup, repeats * n, device)
    batch_ms = None
    if getattr(problem, "batched", False) and n >= batch:
        stacks = [torch.stack(cases[j : j + batch]) for j in range(0, n - batch + 1, batch)]

        def batch_step(i: int):
            return problem.solve(stacks[i % len(stacks)], level)

        batch_step(0)
        batch_ms = float(np.median(measure_round(batch_step, warmup, max(repeats, len(stacks)), device).latency_ms))
    return solutions, case_timing(samples.latency_ms, n), batch_ms


def rollout(problem, step: Callable[[int], object], input_sets: list, steps: int) -> list[np.ndarray]:
    """Each case's ``(K, H, W)`` rollout through ``step`` (the timed mode's own call: a CUDA graph replays its
    captured inputs, so the next inputs are copied into them in place, and the first inputs restored after)."""
    field = getattr(problem, "field", None)
    out = []
    for i, inputs in enumerate(input_sets):
        saved = [t.clone() for t in inputs]
        frames = []
        for k in range(steps):
            output = step(i)
            frames.append((field(output) if field else output).detach().to("cpu", torch.float64).clone())
            if k + 1 < steps:
                for t, new in zip(inputs, problem.advance(inputs, output)):
                    t.copy_(new)
        for t, s in zip(inputs, saved):
            t.copy_(s)
        out.append(torch.stack([f.reshape(f.shape[-2:]) for f in frames]).numpy())
    return out


def time_surrogate(problem, surrogate, cfg: ExecConfig, cases: list, steps: int) -> dict:
    """The surrogate in ``cfg``'s mode and precision on the cases: solutions, timing (batch 1), the batched call,
    the one-time costs."""
    loaded: list = []
    load_ms = time_once(lambda i: loaded.append(prepare_model(surrogate, cfg.device, cfg.seed)), cfg.device)
    prepared = loaded[0]
    host_inputs = [tuple(t.detach().cpu() for t in problem.inputs(case)) for case in cases]
    n = len(cases)

    def timed() -> tuple:
        if cfg.mode == "compile":  # one config's compiles at a time (runner.config_step_of)
            torch._dynamo.reset()
        with execution_settings(cfg, prepared.grad_mode):
            input_sets = [tuple(t.to(cfg.device) for t in x) for x in host_inputs]
            h2d = time_loop(lambda i: [t.to(cfg.device) for t in host_inputs[i % n]], H2D_CALLS, cfg.device)
            step = config_step_of(cfg, prepared.module, input_sets)
            cold_ms = time_once(step, cfg.device)
            solutions = rollout(problem, step, input_sets, steps)
            samples = measure_round(step, cfg.warmup, cfg.iters, cfg.device)
            batched = [
                tuple(torch.cat(parts) for parts in zip(*input_sets[j : j + cfg.batch])) for j in range(0, n, cfg.batch)
            ]
            batched = [b for b in batched if b[0].shape[0] == cfg.batch] or batched[:1]
            batch_step = config_step_of(cfg, prepared.module, batched)
            batch_step(0)
            batch_samples = measure_round(batch_step, cfg.warmup, max(len(batched), MIN_ITERS // 5), cfg.device)
            return h2d, cold_ms, solutions, samples, batched, batch_samples

    h2d, cold_ms, solutions, samples, batched, batch_samples = in_grad_mode(prepared, timed)
    timing = case_timing(samples.latency_ms, n, scale=steps)
    batch_ms = float(np.median(batch_samples.latency_ms)) * steps
    batch = batched[0][0].shape[0]
    one_time = OneTimeCosts(
        load_ms=load_ms,
        first_call_ms=max(0.0, cold_ms - float(np.median(samples.latency_ms))),
        h2d_ms=float(np.median(h2d.latency_ms)),
    )
    return {
        "solutions": solutions,
        "timing": timing,
        "batch": batch,
        "batch_ms": batch_ms,
        "throughput": batch / (batch_ms / 1000.0),
        "one_time": one_time,
    }
