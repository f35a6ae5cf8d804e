"""``surrobench serve``: the request rate one config sustains at a P99 target, under open-loop arrivals and a
dynamic batcher (or sent to an HTTP endpoint with ``--url``)."""

from __future__ import annotations

from pathlib import Path

import typer

from surrobench.cli.app import app
from surrobench.errors import EXIT_CONFIGS_FAILED, Interrupted
from surrobench.cli.options import DbOpt, JsonOpt, WorkloadOptions, command_line, count_option, err_console, flag
from surrobench.cli.options import option_groups, output_option, print_stored, serve_out, write_json, write_output
from surrobench.records.vocab import MODES, PRECISIONS


#: serve's wording of the workload options it takes one of each of (a load has its own --duration-s and --drain-s).
ONE_CONFIG = {
    "model": "The one model served: a zoo name, path/file.py:factory, package.module:factory or a .pt2 file (a "
    "factory's example inputs: docs/models.md, 'Your model').",
    "shape": "The shape of one request: a bare size (128) or a full shape (1x3x128x128).",
    "precision": f"One of {', '.join(PRECISIONS)}.",
    "mode": f"One of {', '.join(MODES)}.",
}


@app.command()
@option_groups(omit=("batch", "iters", "rounds", "timeout_s"), helps=ONE_CONFIG)
def serve(
    *,
    workload: WorkloadOptions,
    rate: str = typer.Option(
        None,
        "--rate",
        help="Offered rates, requests/s, comma-separated (100,200,400); rate x duration at most 1,000,000 arrivals. "
        "With --find-max, the search starts there (not below the sparse rate), instead of the prediction.",
    ),
    find_max: bool = flag(
        False, "--find-max", help="Search the highest rate within --p99-ms: predicted, bracketed, bisected to 5%."
    ),
    p99_ms: float = typer.Option(None, "--p99-ms", help="The P99 latency target, ms."),
    max_batch: str = typer.Option("8", "--max-batch", help="Dynamic batcher's max batch sizes, comma-separated."),
    max_wait_ms: str = typer.Option("2", "--max-wait-ms", help="Max wait of the oldest request, ms, comma-separated."),
    duration_s: float = typer.Option(10.0, "--duration-s", help="Seconds of arrivals per rate (a replay: up to 20x)."),
    warmup_s: float = typer.Option(
        None,
        "--warmup-s",
        help="Leading seconds of arrivals left out of the statistics; default 1, or a quarter of --duration-s "
        "(of an --arrivals file's span) when that is shorter.",
        show_default=False,
    ),
    min_requests: int = count_option(
        368,  # analysis.serve_load.P99_BOUNDING_REQUESTS, not imported: --help stays free of scipy
        "--min-requests",
        help="Offer a rate past --duration-s (up to 20x) until this many requests arrive after the warm-up (a "
        "closed loop keeps sending until they have, within the same 20x); 368 gives every P99 an upper bound at "
        "95%. 0: exactly --duration-s.",
    ),
    drain_s: float = typer.Option(
        5.0, "--drain-s", help="Requests still waiting this long after the last arrival are dropped."
    ),
    arrival: str = typer.Option("poisson", "--arrival", help="poisson or constant (open loop)."),
    arrivals: Path = typer.Option(None, "--arrivals", help="Replay arrival timestamps (s, one per line) from a file."),
    concurrency: str = typer.Option(None, "--concurrency", help="Closed loop: requests outstanding, comma-separated."),
    url: str = typer.Option(None, "--url", help="Send the open-loop schedule to this HTTP endpoint (POST) instead."),
    db: Path = DbOpt,
    json_out: Path = JsonOpt,
    html_out: Path = output_option(
        None, "--html", help="Write the latency-throughput page (self-contained HTML) here."
    ),
) -> None:
    """How much traffic one device (a GPU, or the CPU) takes: requests at open-loop rates through a dynamic batcher, P99 per rate.

    Offer one request (the batch-1 input of `run`) at a time to a dynamic batcher: per rate the offered and
    achieved rate, P50/P95/P99/max latency with intervals, queueing and compute shares, batch size, device
    busy, dropped requests, the share within --p99-ms (SLO) and the load generator's overhead. Before any load the
    unloaded latency per batch size (isolated and back to back); --find-max predicts the capacity at --p99-ms from
    it (a simulation of the batcher), then brackets and bisects it from there; a target the isolated P99 already
    exceeds is answered at once. One load: --rate, --concurrency or --arrivals."""
    w = workload
    # the load runs a model and its report draws plots: imported here, so `--help` stays fast
    from surrobench.api.serve import serve as serve_load
    from surrobench.report.html import serve_page
    from surrobench.report.progress import serve_progress

    with serve_progress(err_console) as (on_start, on_point):
        try:
            load = dict(rates=rate, find_max=find_max, p99_ms=p99_ms, max_batch=max_batch, max_wait_ms=max_wait_ms)
            load.update(duration_s=duration_s, warmup_s=warmup_s, min_requests=min_requests, drain_s=drain_s)
            load.update(arrival=arrival, arrivals_file=arrivals, concurrency=concurrency, url=url)
            hooks = dict(command=command_line(), on_start=on_start, on_point=on_point)
            record = serve_load(w.model, db=db, **hooks, **load, **w.settings(), trust_pickle=w.trust_pickle)
        except Interrupted as cut:  # the --html of the load points that finished; --json is every command's
            write_output(html_out, serve_page(cut.partial) if html_out else "", "--html")
            raise
    serve_out(record)
    print_stored(db, record.run_id)
    write_json(json_out, record.to_json())
    write_output(html_out, serve_page(record) if html_out else "", "--html")  # no page drawn unasked
    if any(p.nonfinite for p in record.policies):  # as run's status nonfinite, its notes say which
        raise typer.Exit(EXIT_CONFIGS_FAILED)
