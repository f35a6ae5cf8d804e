#!/usr/bin/env bash
# Measured advice on the H200, for docs/benchmarks/h200-measured-advice.md: per config, `surrobench diagnose` with
# its defaults (its named remedies measured within the default --measure-s) and, for the configs in COUNTERS, again
# with --counters, each timed; for the configs in OPTIMIZE, `surrobench optimize` (its recipe beside diagnose's
# measured remedy; the other configs' recipes are read from the optimize reports kept in tests/fixtures/h200,
# recorded for docs/benchmarks/h200-optimize.md). Then benchmarks/measured_advice_summary.py prints the table, the
# goals (pass/fail per config) and the estimator-error table.
#
# Usage (repository root):
#   OUT=/path/to/out bash benchmarks/gpu_measured_advice.sh
#   CONFIGS="afno siren fno2d" COUNTERS="siren" OPTIMIZE="afno siren" OUT=... bash benchmarks/gpu_measured_advice.sh
#   DEVICE=cpu OUT=/tmp/x CONFIGS="siren" COUNTERS="" OPTIMIZE="siren" bash benchmarks/gpu_measured_advice.sh  (a tiny CPU trial)
# Config names (name: model, shape, batch): afno (examples/afno.py 256 b4), galerkin (examples/galerkin_transformer.py
# 16384 b4), siren (examples/siren_pinn.py 65536 b1), fno2d (256 b8), unet2d (256 b8), meshgraphnet (65536 b1),
# deeponet (16384 b64), pinn (pinn-mlp 65536 b1), neuralop_fno (examples/neuraloperator 512 b8; needs the carried
# wheels of benchmarks/gpu_diagnose_thirdparty.sh on PYTHONPATH), gat (examples/pyg_gat.py 65536, torch_geometric),
# transformer (examples/patch_transformer.py 256 b8). The zoo, neuraloperator, GAT and transformer sizes are the ones
# of the kept optimize reports.
#
# The whole script stops by TOTAL_S (540 s by default): each step runs under `timeout` capped at what is left, and a
# step that cannot get its minimum is skipped (listed in times.tsv). The default lists take about 500 s: afno and
# siren diagnosed and optimized (--budget-s 75, in-process windows only), fno2d diagnosed, siren with --counters.
# $OUT/advice.tar.gz holds the work folder (diagnosis and optimize JSONs, logs, times.tsv), packed after every step;
# $OUT/summary.md is the summary, written last (and after every step, so a cut call keeps a partial one).
set -uo pipefail
out=${OUT:?set OUT to the output folder}
device=${DEVICE:-cuda}
total_s=${TOTAL_S:-540}
CONFIGS=${CONFIGS-afno siren fno2d}
COUNTERS=${COUNTERS-siren}
OPTIMIZE=${OPTIMIZE-afno siren}
OPT_BUDGET_S=${OPT_BUDGET_S:-75}
start=$(date +%s)
mkdir -p "$out"
work=/tmp/advice
rm -rf "$work" && mkdir -p "$work"
export PYTHONPATH=/tmp/site:$PWD/src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 COLUMNS=200 SURROBENCH_CACHE_DIR=$work/cache
db=$work/advice.db

if [ "$device" = cuda ]; then
  declare -A SPEC=(
    [afno]="examples/afno.py:build|256|4" [galerkin]="examples/galerkin_transformer.py:build|16384|4"
    [siren]="examples/siren_pinn.py:build|65536|1" [fno2d]="fno2d|256|8" [unet2d]="unet2d|256|8"
    [meshgraphnet]="meshgraphnet|65536|1" [deeponet]="deeponet|16384|64" [pinn]="pinn-mlp|65536|1"
    [neuralop_fno]="examples/neuralop_fno.py:build_fno|512|8" [gat]="examples/pyg_gat.py:build|65536|1"
    [transformer]="examples/patch_transformer.py:build|256|8"
  )
  extra=()
else  # a trial of the steps on a CPU: tiny sizes, short rounds
  declare -A SPEC=(
    [afno]="examples/afno.py:build|32|1" [galerkin]="examples/galerkin_transformer.py:build|256|1"
    [siren]="examples/siren_pinn.py:build|1024|1" [fno2d]="fno2d|32|1" [pinn]="pinn-mlp|1024|1"
  )
  extra=(--warmup 2 --iters 20)
fi

left() { echo $((start + total_s - $(date +%s))); }
pack() { tar -czf "$out/advice.tar.gz" -C /tmp advice 2>/dev/null; summarise; }
summarise() { python3 benchmarks/measured_advice_summary.py "$work" tests/fixtures/h200 >"$out/summary.md" 2>&1; }
# step NAME KIND MIN CAP ARGS...: `surrobench ARGS` under timeout min(CAP, time left - 20 s for packing), skipped
# below MIN; its wall seconds and exit code appended to times.tsv
step() {
  local name=$1 kind=$2 min=$3 cap=$4; shift 4
  local room=$(($(left) - 20))
  if [ "$room" -lt "$min" ]; then
    printf '%s\t%s\t\tskipped: %s s left, needs %s\n' "$name" "$kind" "$room" "$min" >>"$work/times.tsv"
    echo "== $name $kind skipped ($room s left)"; return
  fi
  local limit=$((cap < room ? cap : room))
  echo "== $name $kind (timeout $limit s): surrobench $*"
  local t0 t1 rc
  t0=$(date +%s.%N)
  timeout -s INT -k 10 "$limit" python3 -m surrobench "$@" >"$work/${name}_$kind.log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  awk -v n="$name" -v k="$kind" -v a="$t0" -v b="$t1" -v r="$rc" 'BEGIN { printf "%s\t%s\t%.1f\t%s\n", n, k, b - a, r }' \
    >>"$work/times.tsv"
  tail -30 "$work/${name}_$kind.log"
  pack
}

{
  date -u +%FT%TZ
  [ "$device" = cuda ] && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
  python3 -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda)"
  echo "CONFIGS=$CONFIGS COUNTERS=$COUNTERS OPTIMIZE=$OPTIMIZE OPT_BUDGET_S=$OPT_BUDGET_S TOTAL_S=$total_s"
} >"$work/versions.txt" 2>&1
cat "$work/versions.txt"
printf 'name\tstep\tseconds\texit code\n' >"$work/times.tsv"

for name in $CONFIGS; do
  IFS='|' read -r spec shape batch <<<"${SPEC[$name]:-}"
  [ -n "$spec" ] || { echo "unknown config $name"; continue; }
  workload=(--model "$spec" --shape "$shape" --batch "$batch" --device "$device" "${extra[@]}")
  step "$name" diagnose 60 150 diagnose "${workload[@]}" --db "$db" --json "$work/diagnose_$name.json"
  if [[ " $OPTIMIZE " == *" $name "* ]]; then
    step "$name" optimize $((OPT_BUDGET_S / 2)) $((OPT_BUDGET_S + 40)) optimize "${workload[@]}" --db "$db" \
      --budget-s "$OPT_BUDGET_S" --processes 0 --json "$work/opt_$name.json"
  fi
  if [[ " $COUNTERS " == *" $name "* ]]; then
    step "$name" counters 80 200 diagnose "${workload[@]}" --counters --db "$db" \
      --json "$work/diagnose_${name}_counters.json"
  fi
done
pack
echo "== done in $(($(date +%s) - start)) s"
cat "$out/summary.md"
