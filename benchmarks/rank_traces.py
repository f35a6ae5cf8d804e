"""How fast are many rank traces analyzed in parallel? (``map_rank_traces``, docs/benchmarks/trace-analysis.md)

Writes ``--ranks`` Kineto traces of about ``--mb`` MB each (the fno2d fixture tiled in time, as in
benchmarks/trace_analysis.py, each with its own ``distributedInfo.rank``) to ``--workdir`` (default
/tmp: never commit them), then runs the full timeline analysis of every rank through
:func:`surrobench.trace.parallel.map_rank_traces` in a fresh child process and prints wall time,
CPU time, the parent's peak RSS and the largest worker's peak RSS.

Usage::

    python benchmarks/rank_traces.py [--ranks 64] [--mb 100] [--workers N] [--workdir /tmp/surrobench-ranks]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from trace_analysis import FIXTURE, build_tiled_trace, peak_rss_kib

EVENTS_PER_MB = 2_820  # the tiled fno2d trace: 1,099,584 events in 390 MB


def rank_summary(timeline) -> dict:
    """What a worker sends back: a few numbers of the rank's analysis, never the timeline."""
    from surrobench.analysis.timeline import analyze_timeline

    report = analyze_timeline(timeline)
    usage = resource.getrusage(resource.RUSAGE_SELF)  # this worker so far (it may have done other ranks)
    return {
        "rank": timeline.meta.ranks[0],
        "kernels": len(timeline.kernels),
        "busy_ms": sum(d.busy_ms for d in report.devices),
        "gaps": report.gaps.count if report.gaps else 0,
        "pid": os.getpid(),
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_kib": peak_rss_kib(),
    }


def write_ranks(folder: Path, ranks: int, mb: int) -> list[Path]:
    """One tiled trace, then one copy per rank with that rank in its metadata (same events)."""
    folder.mkdir(parents=True, exist_ok=True)
    base = folder / "base.json.tmp"
    if not base.exists():
        build_tiled_trace(FIXTURE, base, mb * EVENTS_PER_MB)
    body = base.read_bytes()
    head = body.index(b'"traceEvents"')
    paths = []
    for rank in range(ranks):
        path = folder / f"rank{rank:03d}.json"
        if not path.exists():
            path.write_bytes(
                body[:head] + f'"distributedInfo": {{"rank": {rank}, "world_size": {ranks}}}, '.encode() + body[head:]
            )
        paths.append(path)
    return paths


def measure(folder: Path, workers: int | None) -> dict:
    from surrobench.trace.parallel import map_rank_traces

    t0, c0 = time.perf_counter(), time.process_time()
    out = map_rank_traces(folder, rank_summary, workers=workers)
    wall = time.perf_counter() - t0
    cpu_of_worker: dict[int, float] = {}
    for r in out:  # a worker's CPU time is cumulative: keep its last (largest) reading
        cpu_of_worker[r["pid"]] = max(cpu_of_worker.get(r["pid"], 0.0), r["cpu_s"])
    return {
        "ranks": len(out),
        "wall_s": round(wall, 1),
        "parent_cpu_s": round(time.process_time() - c0, 1),
        "workers": len(cpu_of_worker),
        "workers_cpu_s": round(sum(cpu_of_worker.values()), 1),
        "parent_peak_rss_mib": round(peak_rss_kib() / 1024),
        "worker_peak_rss_mib": round(max(r["peak_rss_kib"] for r in out) / 1024),
        "kernels": sum(r["kernels"] for r in out),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/surrobench-ranks"))
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    folder = args.workdir / f"{args.ranks}x{args.mb}mb"
    if args.measure:
        print(json.dumps(measure(folder, args.workers)))
        return
    t0 = time.perf_counter()
    paths = write_ranks(folder, args.ranks, args.mb)
    total = sum(p.stat().st_size for p in paths)
    print(
        f"{len(paths)} rank traces, {total / 1e9:.1f} GB in {folder} ({time.perf_counter() - t0:.0f} s to write)",
        file=sys.stderr,
    )
    argv = [
        sys.executable,
        __file__,
        "--measure",
        "--ranks",
        str(args.ranks),
        "--mb",
        str(args.mb),
        "--workdir",
        str(args.workdir),
    ] + (["--workers", str(args.workers)] if args.workers else [])
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "measurement failed")
    r = json.loads(done.stdout)
    print("| ranks | GB | workers | wall (s) | CPU parent + workers (s) | peak RSS parent / largest worker (MiB) |")
    print("|---|---|---|---|---|---|")
    print(
        f"| {r['ranks']} | {total / 1e9:.1f} | {r['workers']} | {r['wall_s']} | {r['parent_cpu_s']} + "
        f"{r['workers_cpu_s']} | {r['parent_peak_rss_mib']} / {r['worker_peak_rss_mib']} |"
    )


if __name__ == "__main__":
    main()
