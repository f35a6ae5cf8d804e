#!/usr/bin/env bash
# How much does the same config move between processes? Runs one config N times, each in a fresh
# process, unpinned and then pinned to one CPU core (taskset), and prints each run's median and CI.
# Usage: benchmarks/process_variance.sh OUT_DIR [N] [run options...]   (from the repository root)
set -uo pipefail
out=${1:?usage: benchmarks/process_variance.sh OUT_DIR [N] [run options...]}; n=${2:-5}; shift 2 || shift $#
mkdir -p "$out"
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
opts=("$@"); [ ${#opts[@]} -eq 0 ] && opts=(--model fno2d --shape 128 --batch 1 --precision fp32 --iters 200 --warmup 20)
for pin in none 1; do
  for i in $(seq 1 "$n"); do
    prefix=(); [ "$pin" != none ] && prefix=(taskset -c "$pin")
    "${prefix[@]}" python3 -m surrobench run "${opts[@]}" --db "$out/variance.db" --tag "pin-$pin" \
      --json "$out/v_${pin}_$i.json" > /dev/null 2>&1
    python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['results'][0]; l=r['latency_ms']; \
print(f\"pin={sys.argv[2]} run {sys.argv[3]}: median {l['median']:.3f} ms CI {l['ci95_median'][0]:.3f}-{l['ci95_median'][1]:.3f} P95 {l['p95']:.3f}\")" \
      "$out/v_${pin}_$i.json" "$pin" "$i"
  done
done | tee "$out/variance.txt"
