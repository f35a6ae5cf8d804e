"""How fast does ``surrobench analyze`` read a huge Kineto trace? (docs/benchmarks/trace-analysis.md)

Builds a large trace by tiling a fixture in time (each copy shifted by the fixture's span, correlation
and External ids offset so they stay unique), then measures wall time and peak RSS of each method in a
fresh child process:

- ``surrobench``: load + full timeline analysis, defaults (msgspec, 16 MiB pieces over every core)
- ``surrobench-load``: loading only
- ``surrobench-1proc``: load + analysis in this process only (no range workers)
- ``surrobench-orjson``: load + analysis with msgspec hidden (orjson dicts), range workers on
- ``surrobench-stdlib``: load + analysis with msgspec and orjson hidden (the pure-Python fallback)
- ``json.loads`` / ``orjson.loads``: parsing the whole file at once, for reference

Wall time, CPU time (this process and its range workers) and peak RSS (this process, and the largest
range worker: their sum bounds the total) are printed; on a shared machine CPU time is the steadier
number.

Usage::

    python benchmarks/trace_analysis.py [--events 1100000] [--workdir /tmp/surrobench-bench] [--methods a,b]

Results go to docs/benchmarks/trace-analysis.md by hand, with the machine and date.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "traces" / "fno2d_128_b1_fp32_h200.json.gz"
METHODS = (
    "surrobench",
    "surrobench-load",
    "surrobench-1proc",
    "surrobench-orjson",
    "surrobench-stdlib",
    "json.loads",
    "orjson.loads",
)
_HOLE = re.compile(r'"\\u0000(TS|CO|EX|ID)\\u0000"')


def build_tiled_trace(fixture: Path, out: Path, events: int) -> int:
    """Write a trace of about ``events`` events made of time-shifted copies of ``fixture``; returns the count."""
    doc = json.loads(gzip.decompress(fixture.read_bytes()))
    base = doc.pop("traceEvents")
    ts_ns = [round(e["ts"] * 1000) if isinstance(e.get("ts"), (int, float)) else 0 for e in base]
    ends = [t + round(e.get("dur", 0) * 1000) for t, e in zip(ts_ns, base)]
    span_ns = max(ends) - min(ts_ns) + 100_000
    max_id = max([_ids(e)[0] for e in base] + [1]) + 1
    templates = [_template(e) for e in base]
    tiles = max(1, round(events / len(base)))
    header = json.dumps(doc)[:-1]
    with open(out, "w") as f:
        f.write(header + ', "traceEvents": [\n')
        for k in range(tiles):
            shift, id_shift = k * span_ns, k * max_id
            block = []
            for (pieces, holes), t, e in zip(templates, ts_ns, base):
                corr, ext = _ids(e)[1:]
                vals = {
                    "TS": _us(t + shift),
                    "CO": str(corr + id_shift),
                    "EX": str(ext + id_shift),
                    "ID": str(e.get("id", 0) + id_shift if isinstance(e.get("id"), int) else 0),
                }
                block.append("".join(p + vals[h] for p, h in zip(pieces, holes)) + pieces[-1])
            f.write(("  " if k == 0 else ",\n  ") + ",\n  ".join(block))
        f.write("\n]}\n")
    return tiles * len(base)


def _ids(e: dict) -> tuple[int, int, int]:
    args = e.get("args") if isinstance(e.get("args"), dict) else {}
    corr, ext = args.get("correlation", 0), args.get("External id", 0)
    flow = e.get("id", 0) if isinstance(e.get("id"), int) else 0
    return max(corr, ext, flow), corr, ext


def _template(e: dict) -> tuple[list[str], list[str]]:
    """The event's JSON text split around the values that change per tile."""
    e = dict(e)
    if "ts" in e:
        e["ts"] = "\x00TS\x00"
    if isinstance(e.get("id"), int):
        e["id"] = "\x00ID\x00"
    if isinstance(e.get("args"), dict):
        args = dict(e["args"])
        for key, hole in (("correlation", "CO"), ("External id", "EX")):
            if key in args:
                args[key] = f"\x00{hole}\x00"
        e["args"] = args
    parts = _HOLE.split(json.dumps(e))
    return parts[0::2], parts[1::2]


def _us(ns: int) -> str:
    return f"{ns // 1000}.{ns % 1000:03d}"


def peak_rss_kib() -> int:
    """This process's peak RSS (KiB) from ``VmHWM``: unlike ``ru_maxrss`` it is not inherited across
    ``execve`` from the process that forked us (getrusage(2) keeps the larger of the two)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def measure(method: str, path: Path) -> dict:
    """Run ``method`` on ``path`` in this process; wall seconds and peak RSS (MiB) of the process."""
    hidden = {"surrobench-orjson": ["msgspec"], "surrobench-stdlib": ["msgspec", "orjson"]}.get(method, [])
    if hidden:  # `import msgspec` fails here and in the range workers: the fallback decoders
        blocker = Path(tempfile.mkdtemp())
        for name in hidden:
            sys.modules[name] = None
            (blocker / f"{name}.py").write_text("raise ImportError('hidden by the benchmark')\n")
        os.environ["PYTHONPATH"] = os.pathsep.join([str(blocker), os.environ.get("PYTHONPATH", "")])
    t0, c0 = time.perf_counter(), time.process_time()
    if method.startswith("surrobench"):
        from surrobench.analysis.timeline import analyze_timeline
        from surrobench.trace.kineto import load_kineto_files

        timeline = load_kineto_files([path], many=False, workers=1 if method == "surrobench-1proc" else None)
        if method != "surrobench-load":
            analyze_timeline(timeline)
    elif method == "json.loads":
        json.loads(path.read_bytes())
    else:
        import orjson

        orjson.loads(path.read_bytes())
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)  # the range workers, waited for
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "workers_cpu_s": round(kids.ru_utime + kids.ru_stime, 2),
        "peak_rss_mib": round(peak_rss_kib() / 1024),
        "worker_peak_rss_mib": round(kids.ru_maxrss / 1024),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_100_000)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/surrobench-bench"))
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--measure", nargs=2, metavar=("METHOD", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure[0], Path(args.measure[1]))))
        return
    args.workdir.mkdir(parents=True, exist_ok=True)
    trace = args.workdir / f"tiled_{args.events}.json"
    if not trace.exists():
        n = build_tiled_trace(FIXTURE, trace, args.events)
        print(f"built {trace}: {n} events, {trace.stat().st_size / 1e6:.0f} MB", file=sys.stderr)
    print("| method | wall (s) | CPU main + workers (s) | peak RSS main / largest worker (MiB) |\n|---|---|---|---|")
    for method in args.methods.split(","):
        run = subprocess.run(
            [sys.executable, __file__, "--measure", method, str(trace)], capture_output=True, text=True
        )
        if run.returncode != 0:
            print(f"| {method} | failed: {run.stderr.strip().splitlines()[-1:]} | | |")
            continue
        r = json.loads(run.stdout)
        print(
            f"| {method} | {r['wall_s']} | {r['cpu_s']} + {r['workers_cpu_s']} | {r['peak_rss_mib']} / "
            f"{r['worker_peak_rss_mib']} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
