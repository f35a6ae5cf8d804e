"""A stand-in for ``ncu`` over a captured raw-page CSV (``$FAKE_NCU_CSV``): it applies the filters surrobench
passes (``--kernel-name-base demangled --kernel-name regex:...``, ``--filter-mode per-launch-config`` with
``--launch-count``) to the captured launches, as Nsight Compute's CLI documents them, and writes the rows it keeps
to ``--log-file``; an enumerating run (only ``launch__*`` metrics and the duration) reads 1 replay pass a launch.
Each call appends its arguments to ``$FAKE_NCU_CALLS`` (one JSON list a line)."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import sys


def main(argv: list[str]) -> None:
    opts = {argv[i]: argv[i + 1] for i in range(len(argv) - 1) if argv[i].startswith("--")}
    with open(os.environ["FAKE_NCU_CALLS"], "a") as calls:
        calls.write(json.dumps(argv) + "\n")
    lines = open(os.environ["FAKE_NCU_CSV"]).read().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header, body = rows[0], [r for r in rows[1:] if r and r[0].strip()]
    col = {name: i for i, name in enumerate(header)}
    if opts.get("--kernel-name-base") == "demangled":
        pattern = re.compile(opts["--kernel-name"].removeprefix("regex:"))
        body = [r for r in body if pattern.search(r[col["Kernel Name"]])]
    if opts.get("--filter-mode") == "per-launch-config":
        keys = ("launch__grid_size", "launch__block_size", "launch__shared_mem_per_block_static")
        seen: dict[tuple, int] = {}
        kept = []
        for r in body:
            key = tuple(r[col[k]] for k in keys)
            if seen.get(key, 0) < int(opts.get("--launch-count", "0") or 0) or "--launch-count" not in opts:
                kept.append(r)
            seen[key] = seen.get(key, 0) + 1
        body = kept
    if all(m.startswith("launch__") or m == "gpu__time_duration.sum" for m in opts["--metrics"].split(",")):
        body = [[*r[: col["profiler__replayer_passes"]], "1", *r[col["profiler__replayer_passes"] + 1 :]] for r in body]
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL).writerows([header, *body])
    with open(opts["--log-file"], "w") as f:
        f.write("\n".join(lines[:start]) + "\n" + out.getvalue())


if __name__ == "__main__":
    main(sys.argv[1:])
