"""``surrobench optimize``: try the remedies on each config, measured interleaved with the baseline, guarded
for accuracy; the before/after table, the recipe, two stored runs (:mod:`surrobench.tune.plans`)."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import typer

from surrobench.api.defaults import DEFAULT_BUDGET_S, DEFAULT_PROCESS_PAIRS, DEFAULT_ROUNDS, DEFAULT_TOLERANCE
from surrobench.cli.app import app
from surrobench.cli.options import count_option, DbOpt, JsonOpt, MarkdownOpt, WorkloadOptions, flag, option_groups
from surrobench.cli.options import command_line, exit_if_configs_failed, refuse_given, optimization_out, err_console
from surrobench.errors import EXIT_CONFIGS_FAILED, Interrupted

RunOpt = typer.Option(
    None, "--run", help="Start from a stored run: optimize each of its configs (workload options are then refused)."
)
BudgetOpt = typer.Option(
    DEFAULT_BUDGET_S,
    "--budget-s",
    help="Seconds per config: the search, the recipe's confirmation windows (at most half of it kept for them) and "
    "--processes (one pair kept, at most a quarter, while it fits after them); a round or a pair starts only when it "
    "would end within it: a first compilation or a first round may run past it (notes say so). --verify follows it.",
)
ToleranceOpt = typer.Option(
    DEFAULT_TOLERANCE, "--tolerance", help="Largest relative L2 error a remedy may add (per output and channel)."
)
ThoroughOpt = flag(
    False, "--thorough", help="Also try torch.compile(mode='max-autotune-no-cudagraphs') (long compiles)."
)
OptRoundsOpt = count_option(
    DEFAULT_ROUNDS, "--rounds", help="Interleaved rounds per measurement (A B A B ...); at least 2."
)
VerifyOpt = count_option(
    0,
    "--verify",
    metavar="PAIRS",
    help="Then measure each recipe against its baseline again in PAIRS pairs of fresh `surrobench run` "
    "processes (order alternating) and say whether the speedup reproduces; 0: no check, else at least 2.",
)
ProcessesOpt = count_option(
    DEFAULT_PROCESS_PAIRS,
    "--processes",
    metavar="PAIRS",
    help="Also time the recipe against the baseline in PAIRS (0 to 20) pairs of fresh `surrobench run` processes "
    "(tagged confirm:baseline/confirm:recipe), one timing window each, so its interval holds the drift between "
    "processes; only when there is a recipe. 0: in-process windows only (then --verify judges against the fresh "
    "pairs' spread alone, a wide interval).",
)
OnlyOpt = typer.Option(
    None, "--only", help="Try only these remedies, comma-separated (cudagraph,tf32; threads: every threads=N)."
)


#: Workload options optimize does not take: its own --rounds (the interleaved rounds of a measurement), and
#: --timeout-s (its timing windows do not run through the sweep's per-config limit yet).
_OMITTED = ("rounds", "trust_pickle", "timeout_s")
#: The workload options it does take, refused together with --run (the stored run's configs are optimized).
_WORKLOAD_PARAMS = {f.name for f in fields(WorkloadOptions)} - set(_OMITTED)


@app.command(name="optimize")
@option_groups(omit=_OMITTED)
def optimize_command(
    ctx: typer.Context,
    *,
    workload: WorkloadOptions,
    run: str = RunOpt,
    budget_s: float = BudgetOpt,
    tolerance: float = ToleranceOpt,
    thorough: bool = ThoroughOpt,
    rounds: int = OptRoundsOpt,
    only: str = OnlyOpt,
    verify: int = VerifyOpt,
    processes: int = ProcessesOpt,
    objective: str = typer.Option(
        "latency",
        "--objective",
        help="latency: the speed of one call; capacity: the remedies and batching policy with the highest request "
        "rate at --p99-ms, predicted from the unloaded service times and verified under load (two serve runs).",
    ),
    p99_ms: float = typer.Option(None, "--p99-ms", help="--objective capacity: the P99 latency target, ms."),
    max_batch: str = typer.Option(
        "1,4,8,16", "--max-batch", help="--objective capacity: the dynamic batcher's max batch sizes searched."
    ),
    max_wait_ms: str = typer.Option("0.5,2", "--max-wait-ms", help="--objective capacity: the max waits searched, ms."),
    duration_s: float = typer.Option(
        3.0, "--duration-s", help="--objective capacity: seconds of arrivals per rate of the verifying loads."
    ),
    db: Path = DbOpt,
    json_out: Path = JsonOpt,
    markdown: Path = MarkdownOpt,
) -> None:
    """Try the remedies on each config, keep what is measured faster, and check the outputs stayed right.

    Each remedy (CUDA graph, torch.compile, TF32, fp16/bf16/fp32, channels_last, cudnn.benchmark, threads) is timed in
    rounds interleaved with the baseline and checked against the fp32 (and fp64) output; the winners are stacked
    greedily from the fastest and from its rival (the fastest that excludes it), the faster stack kept, and what
    is faster beyond the noise floor within the tolerance recommended. --warmup and --iters bound each round: its
    timed calls are sized to about 0.3 s of the baseline, within [5, --iters]."""
    from surrobench.api.optimize import optimize

    capacity = objective != "latency" or p99_ms is not None
    if capacity:
        unused = {"run", "verify", "markdown", "rounds", "processes"}
        refuse_given(ctx, unused, "--objective capacity searches a serving policy under load")
        kwargs = dict(objective=objective, p99_ms=p99_ms, max_batch=max_batch, max_wait_ms=max_wait_ms)
        kwargs.update(duration_s=duration_s, budget_s=budget_s)
    else:
        refuse_given(ctx, {"max_batch", "max_wait_ms", "duration_s"}, "--objective latency times one call")
        kwargs = dict(run=run, budget_s=budget_s, rounds=rounds, verify=verify, processes=processes)
        if run is not None:
            refuse_given(ctx, _WORKLOAD_PARAMS, "--run optimizes a stored run's configs")
    sweep = workload.settings() if capacity else (workload.sweep() if run is None else {})
    for name in _OMITTED:  # optimize's own --rounds; the others at their defaults
        sweep.pop(name, None)
    try:
        hooks = dict(
            on_config=lambda label: err_console.print(f"optimizing {label} (budget {budget_s:g} s)", markup=False),
            on_phase=lambda text: err_console.print(f"  {text}", markup=False),
            on_warning=lambda text: None,  # the report prints its warnings
        )
        kwargs.update(tolerance=tolerance, thorough=thorough, only=only, db=db, command=command_line())
        record = optimize(workload.model if run is None or capacity else None, **hooks, **kwargs, **sweep)
    except Interrupted as cut:  # what was measured is stored, written (before it prints) and shown, then the exit
        optimization_out(cut.partial.to_json(), markdown, json_out, db)
        raise
    optimization_out(record.to_json(), markdown, json_out, db)
    if capacity and record.candidates[0].accurate is None:  # its baseline failed, as a latency optimization's
        raise typer.Exit(EXIT_CONFIGS_FAILED)
    if not capacity:
        exit_if_configs_failed(tuple(entry.baseline for entry in record.configs))
