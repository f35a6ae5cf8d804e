#!/usr/bin/env bash
# Recipe steps named by hand, for docs/benchmarks/h200-measured-advice.md: where no optimize report of the same device
# is kept (benchmarks/gpu_measured_advice.sh's RECIPE reads one), each recipe given in RECIPES ("NAME ARGS|NAME ARGS",
# ARGS the diagnose workload with `--mode eager,MODE` so the recipe's replayed kernels are matched against the eager
# step's) is diagnosed with `--measure-s 0 --counters`: $OUT/diagnose_NAME_recipe.json, NAME_recipe.log and a line
# "NAME recipe SECONDS EXIT" in $OUT/times.txt. Each step under `timeout` (175 s at most), skipped under 60 s left;
# the call stops by TOTAL_S (560). Read with measured_advice_summary.recipe_step.
# Usage: RECIPES="pinn --model pinn-mlp --shape 65536 --batch 1 --precision tf32 --mode eager,cudagraph" OUT=... bash benchmarks/gpu_recipe_steps.sh
export PYTHONPATH=$PWD/src COLUMNS=200 PYTHONUNBUFFERED=1
start=$(date +%s); total=${TOTAL_S:-560}
r() {
  local n=$1; shift
  local room=$((start + total - $(date +%s) - 5)); [ "$room" -lt 60 ] && { echo "$n skipped $room" >>"$OUT/times.txt"; return; }
  local lim=$((room < 175 ? room : 175)) t0 t1 rc
  t0=$(date +%s.%N)
  timeout -s INT -k 10 "$lim" python3 -m surrobench diagnose "$@" --device cuda --measure-s 0 --counters --db /tmp/r.db \
    --json "$OUT/diagnose_${n}_recipe.json" >"$OUT/${n}_recipe.log" 2>&1; rc=$?
  t1=$(date +%s.%N)
  awk -v n="$n" -v a="$t0" -v b="$t1" -v r="$rc" 'BEGIN{printf "%s\trecipe\t%.1f\t%s\n", n, b-a, r}' >>"$OUT/times.txt"
  tail -3 "$OUT/${n}_recipe.log"
}
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader >"$OUT/versions.txt"; date -u +%FT%TZ >>"$OUT/versions.txt"
IFS='|'
for spec in $RECIPES; do IFS=' ' read -r -a a <<<"$spec"; r "${a[@]}"; done
cat "$OUT/times.txt"
