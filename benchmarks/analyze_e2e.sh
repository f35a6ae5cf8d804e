#!/bin/bash
# `surrobench analyze` of the 1.1 M-event tiled trace end to end, as docs/benchmarks/startup.md measures it:
# N rounds; in each round one run per source tree given (interleaved, so a busy spell hits both alike), each
# run started only after a second in which the machine's CPUs were at least 95% idle (/proc/stat).
#
# Usage:  benchmarks/analyze_e2e.sh N SRC_DIR [SRC_DIR...]
#         e.g. benchmarks/analyze_e2e.sh 5 /tmp/before/src src
# Prints per run: the tree, wall s, user s, system s (the process and the range workers it waited for), the
# largest single process's peak RSS (KiB), how idle the second before was, the load average.
# The trace is built by `python benchmarks/trace_analysis.py --events 1100000` (TRACE below).
set -u
N=$1; shift
TRACE=${TRACE:-/tmp/surrobench-bench/tiled_1100000.json}
PYTHON=${PYTHON:-python}
quiet_second() {
  while true; do
    local a b tot i
    a=($(head -1 /proc/stat)); sleep 1; b=($(head -1 /proc/stat))
    tot=0; for i in 1 2 3 4 5 6 7 8; do tot=$((tot + b[i] - a[i])); done
    IDLE=$((100 * (b[4] - a[4]) / tot))
    [ "$IDLE" -ge 95 ] && return
  done
}
for _ in $(seq 1 "$N"); do
  for src in "$@"; do
    quiet_second
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    /usr/bin/time -f "$src %e %U %S %M idle_before=${IDLE} load=${load}" \
      env PYTHONPATH="$src" "$PYTHON" -m surrobench analyze "$TRACE" > /dev/null
  done
done
