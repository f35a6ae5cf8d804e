"""How fast does ``surrobench analyze`` read a huge Kineto trace? (issue 4, "Speed")

Builds a large trace by tiling a fixture in time (each copy shifted by the fixture's span, correlation
and External ids offset so they stay unique), then measures wall time and peak RSS of each method in a
fresh child process:

- ``surrobench``: load + full timeline analysis (the goal: < 8 s, < 1 GB on 2 cores)
- ``surrobench-load``: loading only
- ``surrobench-no-orjson``: load + analysis with orjson hidden (the pure-Python fallback)
- ``json.loads`` / ``orjson.loads``: parsing the whole file at once, for reference

Usage::

    python benchmarks/trace_analysis.py [--events 1100000] [--workdir /tmp/surrobench-bench]

Results go to docs/benchmarks/trace-analysis.md by hand, with the machine and date.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "traces" / "fno2d_128_b1_fp32_h200.json.gz"
METHODS = ("surrobench", "surrobench-load", "surrobench-no-orjson", "json.loads", "orjson.loads")
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
                vals = {"TS": _us(t + shift), "CO": str(corr + id_shift), "EX": str(ext + id_shift),
                        "ID": str(e.get("id", 0) + id_shift if isinstance(e.get("id"), int) else 0)}
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


def measure(method: str, path: Path) -> dict:
    """Run ``method`` on ``path`` in this process; wall seconds and peak RSS (MiB) of the process."""
    if method == "surrobench-no-orjson":
        sys.modules["orjson"] = None  # makes `import orjson` fail: the fallback path
    t0 = time.perf_counter()
    if method.startswith("surrobench"):
        from surrobench.analysis.timeline import analyze_timeline
        from surrobench.trace import load_trace

        timeline = load_trace(path)
        if method != "surrobench-load":
            analyze_timeline(timeline)
    elif method == "json.loads":
        json.loads(path.read_bytes())
    else:
        import orjson

        orjson.loads(path.read_bytes())
    wall = time.perf_counter() - t0
    return {"wall_s": round(wall, 2), "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


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
    print("| method | wall (s) | peak RSS (MiB) |\n|---|---|---|")
    for method in args.methods.split(","):
        run = subprocess.run([sys.executable, __file__, "--measure", method, str(trace)],
                             capture_output=True, text=True)
        if run.returncode != 0:
            print(f"| {method} | failed: {run.stderr.strip().splitlines()[-1:]} | |")
            continue
        r = json.loads(run.stdout)
        print(f"| {method} | {r['wall_s']} | {r['peak_rss_mib']} |", flush=True)


if __name__ == "__main__":
    main()
