#!/usr/bin/env bash
# One remedy's speedup measured again and again in fresh processes, by diagnose and by optimize in turn, for
# docs/benchmarks/h200-measured-advice.md ("The same remedy in diagnose and optimize"): is a gap between the two a
# difference of the tools or the spread between processes? Each repeat runs
#   diagnose  `surrobench diagnose ... --json` (its defaults: every named remedy measured, default --measure-s);
#   optimize  `surrobench optimize ... --only ONLY --budget-s OPT_BUDGET_S --processes 0 --json`;
# alternately, REPEATS times each, every step under its own timeout, the whole by TOTAL_S (default 420).
# Then the inline summary prints each process's speedup of every remedy in ONLY.
# Usage: MODEL=examples/patch_transformer.py:build SHAPE=256 BATCH=8 ONLY=fp16,bf16 OUT=/o bash benchmarks/gpu_advice_repeat.sh
set -uo pipefail
out=${OUT:?set OUT}
model=${MODEL:?} shape=${SHAPE:?} batch=${BATCH:?} only=${ONLY:?} device=${DEVICE:-cuda}
repeats=${REPEATS:-2} total_s=${TOTAL_S:-420} opt_budget=${OPT_BUDGET_S:-30}
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
work=/tmp/repeat && rm -rf "$work" && mkdir -p "$work" "$out"
start=$(date +%s)
workload=(--model "$model" --shape "$shape" --batch "$batch" --device "$device" --db "$work/r.db")
run() {  # run NAME CAP ARGS...
  local name=$1 cap=$2; shift 2
  local left=$((start + total_s - $(date +%s)))
  [ "$left" -lt 30 ] && { echo "== $name skipped ($left s left)"; return; }
  echo "== $name"; timeout -s INT -k 10 $((cap < left ? cap : left)) python3 -m surrobench "$@" >"$work/$name.log" 2>&1
  echo "rc=$?" >>"$work/$name.log"
}
for i in $(seq 1 "$repeats"); do
  run "diagnose$i" 90 diagnose "${workload[@]}" --json "$work/diagnose$i.json"
  run "optimize$i" $((opt_budget + 40)) optimize "${workload[@]}" --only "$only" --budget-s "$opt_budget" --processes 0 \
    --json "$work/optimize$i.json"
done
python3 - "$work" "$only" <<'PY' | tee "$out/repeat.md"
import json, pathlib, sys
work, only = pathlib.Path(sys.argv[1]), sys.argv[2].split(",")
print("| process | remedy | speedup [95% CI] | baseline ms |\n|---|---|---|---|")
for path in sorted(work.glob("*.json")):
    doc = json.loads(path.read_text())
    if path.name.startswith("diagnose"):
        got = {m["remedy"]: (m["speedup"], m["ci95"], m["baseline_ms"]) for f in doc["findings"] for m in f.get("measured") or []}
    else:
        got = {c["name"]: ((c.get("speedup") or {}).get("median"), (c.get("speedup") or {}).get("ci95"), c.get("baseline_ms"))
               for cfg in doc["configs"] for c in cfg["candidates"]}
    for r in only:
        sp, ci, base = got.get(r, (None, None, None))
        ci = f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""
        print(f"| {path.stem} | {r} | {'-' if sp is None else f'{sp:.2f}x'}{ci} | {'-' if base is None else f'{base:.3f}'} |")
PY
tar -czf "$out/repeat.tar.gz" --exclude '*.db' -C /tmp repeat
