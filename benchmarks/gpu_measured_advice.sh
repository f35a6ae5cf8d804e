#!/usr/bin/env bash
# Measured advice on the H200, for docs/benchmarks/h200-measured-advice.md. Per config, each step timed:
#   diagnose  `surrobench diagnose` with its defaults (its named remedies measured within the default --measure-s),
#             for the configs in DIAGNOSE (default: every config of the lanes; a later call may leave it out and
#             unpack beside an earlier call's folder);
#   optimize  `surrobench optimize` (configs in OPTIMIZE): with its defaults, or `--budget-s OPT_BUDGET_S
#             --processes 0` when OPT_BUDGET_S is set; the other configs' recipes are read from the optimize
#             reports kept in tests/fixtures/h200 (recorded for docs/benchmarks/h200-optimize.md, same sizes);
#   counters  diagnose with --counters (configs in COUNTERS), its defaults otherwise;
#   recipe    the recipe step (configs in RECIPE): optimize's recipe (this call's report, else the kept one) as
#             `diagnose --measure-s 0 --counters --mode eager,MODE ...`, so its replayed kernels are matched
#             against the eager step's: the recipe step's coverage and its time against its roofline bound
#             (SEED=an earlier call's advice.tar.gz unpacks its reports first; the built-in H200 ceilings, unless CALIBRATE=1: then each lane's cache folder first stores this GPU's
#             ceilings by `surrobench calibrate`). A recipe of the eager mode is profiled alone.
# Then benchmarks/measured_advice_summary.py prints the table, the goals (pass/fail per config), the coverage and
# headroom of the recipe steps and the estimator-error table.
#
# Usage (repository root):
#   OUT=/path/to/out bash benchmarks/gpu_measured_advice.sh                       (one GPU: the CONFIGS list)
#   LANES="afno siren;galerkin tfno;fno2d unet2d;gat pinn" OUT=... bash benchmarks/gpu_measured_advice.sh
#       (one lane per GPU, run side by side, lane i on CUDA_VISIBLE_DEVICES=i: each config still has a GPU of
#       its own, timed alone on it; every lane has its own database and cache folder)
#   DEVICE=cpu OUT=/tmp/x LANES="siren;pinn" OPTIMIZE="siren" bash benchmarks/gpu_measured_advice.sh  (a CPU trial)
# Config names (name: model, shape, batch): afno (examples/afno.py 256 b4), galerkin (examples/galerkin_transformer.py
# 16384 b4), siren (examples/siren_pinn.py 65536 b1), fno2d (256 b8), unet2d (256 b8), meshgraphnet (65536 b1),
# deeponet (16384 b64), pinn (pinn-mlp 65536 b1), neuralop_fno and tfno (examples/neuralop_fno.py 512 b8; the
# neuraloperator wheels installed to /tmp/site, which is on PYTHONPATH), gat (examples/pyg_gat.py 65536,
# torch_geometric), transformer (examples/patch_transformer.py 256 b8). The zoo, neuraloperator FNO, GAT and
# transformer sizes are the ones of the kept optimize reports (there is none of the TFNO: put it in OPTIMIZE).
# MORE="moe=devseed/t26.py:moe|256|4 ..." adds configs by name (on a GPU run).
#
# The whole script stops by TOTAL_S (540 s by default): each step runs under `timeout` capped at what is left, and a
# step that cannot get its minimum is skipped (listed in the times file). $OUT/advice.tar.gz holds the work folder
# (diagnosis and optimize JSONs, logs, times-START.tsv), packed after every step; the folders of several calls
# unpack into one (tar -xzf each into the same place) for one summary; $OUT/summary.md is the summary,
# rewritten after every step (a cut call keeps a partial one).
set -uo pipefail
out=${OUT:?set OUT to the output folder}
device=${DEVICE:-cuda}
total_s=${TOTAL_S:-540}
LANES=${LANES-${CONFIGS-afno siren fno2d}}
COUNTERS=${COUNTERS-}
DIAGNOSE=${DIAGNOSE-${LANES//;/ }}
OPTIMIZE=${OPTIMIZE-afno siren}
RECIPE=${RECIPE-}
OPT_BUDGET_S=${OPT_BUDGET_S:-}
start=$(date +%s)
mkdir -p "$out"
work=/tmp/advice
rm -rf "$work" && mkdir -p "$work"
# SEED: an earlier call's advice.tar.gz, unpacked first (its optimize reports give this call's recipe steps)
[ -n "${SEED:-}" ] && tar -xzf "$SEED" -C /tmp
# named by the call's start, so that the work folders of several calls unpack into one folder side by side
times=$work/times-$start.tsv versions=$work/versions-$start.txt
export PYTHONPATH=/tmp/site:$PWD/src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 COLUMNS=200

if [ "$device" = cuda ]; then
  declare -A SPEC=(
    [afno]="examples/afno.py:build|256|4" [galerkin]="examples/galerkin_transformer.py:build|16384|4"
    [siren]="examples/siren_pinn.py:build|65536|1" [fno2d]="fno2d|256|8" [unet2d]="unet2d|256|8"
    [meshgraphnet]="meshgraphnet|65536|1" [deeponet]="deeponet|16384|64" [pinn]="pinn-mlp|65536|1"
    [neuralop_fno]="examples/neuralop_fno.py:build_fno|512|8" [tfno]="examples/neuralop_fno.py:build_tfno|512|8"
    [gat]="examples/pyg_gat.py:build|65536|1" [transformer]="examples/patch_transformer.py:build|256|8"
  )
  extra=()
  # MORE="name=model|shape|batch ..." adds configs (a trial's model files, say)
  for m in ${MORE:-}; do SPEC[${m%%=*}]=${m#*=}; done
  # step minimums and caps, s: diagnose (goal 90 s), optimize (its default budget 150 s + processes, or the set one),
  # --counters (goal 150 s), the recipe step with counters
  diag=(45 150) counters=(60 200) recipe=(45 240)
  if [ -n "$OPT_BUDGET_S" ]; then opt=($((OPT_BUDGET_S / 2)) $((OPT_BUDGET_S + 40))); else opt=(90 240); fi
else  # a trial of the steps on a CPU: tiny sizes, short rounds
  declare -A SPEC=(
    [afno]="examples/afno.py:build|32|1" [galerkin]="examples/galerkin_transformer.py:build|256|1"
    [siren]="examples/siren_pinn.py:build|1024|1" [fno2d]="fno2d|32|1" [pinn]="pinn-mlp|1024|1"
    [deeponet]="deeponet|256|1"
  )
  extra=(--warmup 2 --iters 20)
  diag=(20 200) counters=(20 200) recipe=(20 200) opt=(20 200)
fi

left() { echo $((start + total_s - $(date +%s))); }
# pack and summarise under one lock: lanes finish steps at any time
pack() {
  (
    flock 9
    python3 benchmarks/measured_advice_summary.py "$work" tests/fixtures/h200 >"$out/summary.md" 2>&1
    tar -czf "$out/advice.tar.gz" --exclude '*.db' --exclude cache -C /tmp advice 2>/dev/null
  ) 9>"$work/.lock"
}
# step NAME KIND MIN CAP ARGS...: `surrobench ARGS` under timeout min(CAP, time left - 20 s for packing), skipped
# below MIN; its wall seconds and exit code appended to the times file (one short line: an atomic append)
step() {
  local name=$1 kind=$2 min=$3 cap=$4; shift 4
  local room=$(($(left) - 20))
  if [ "$room" -lt "$min" ]; then
    printf '%s\t%s\t\tskipped: %s s left, needs %s\n' "$name" "$kind" "$room" "$min" >>"$times"
    echo "== $name $kind skipped ($room s left)"; return
  fi
  local limit=$((cap < room ? cap : room))
  echo "== $name $kind (timeout $limit s, gpu ${CUDA_VISIBLE_DEVICES:--}): surrobench $*"
  local t0 t1 rc
  t0=$(date +%s.%N)
  timeout -s INT -k 10 "$limit" python3 -m surrobench "$@" >"$work/${name}_$kind.log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  awk -v n="$name" -v k="$kind" -v a="$t0" -v b="$t1" -v r="$rc" 'BEGIN { printf "%s\t%s\t%.1f\t%s\n", n, k, b - a, r }' \
    >>"$times"
  tail -8 "$work/${name}_$kind.log"
  pack
}
in_list() { [[ " $2 " == *" $1 "* ]]; }

# lane I CONFIGS...: every step of each config in turn, on GPU I (when there are several lanes)
lane() {
  local i=$1; shift
  local db=$work/lane$i.db
  export SURROBENCH_CACHE_DIR=$work/cache$i
  [ "$device" = cuda ] && [ "$nlanes" -gt 1 ] && export CUDA_VISIBLE_DEVICES=$i
  # twice: the first, from an idle GPU's clocks, may find its repeats disagree and store nothing
  [ -n "${CALIBRATE:-}" ] && for _ in 1 2; do step "lane$i" calibrate 20 120 calibrate --device "$device"; done
  for name in "$@"; do
    IFS='|' read -r spec shape batch <<<"${SPEC[$name]:-}"
    [ -n "$spec" ] || { echo "unknown config $name"; continue; }
    local workload=(--model "$spec" --shape "$shape" --batch "$batch" --device "$device" "${extra[@]}")
    in_list "$name" "$DIAGNOSE" && step "$name" diagnose "${diag[@]}" diagnose "${workload[@]}" --db "$db" --json "$work/diagnose_$name.json"
    if in_list "$name" "$OPTIMIZE"; then
      local budget=()
      [ -n "$OPT_BUDGET_S" ] && budget=(--budget-s "$OPT_BUDGET_S" --processes 0)
      step "$name" optimize "${opt[@]}" optimize "${workload[@]}" --db "$db" "${budget[@]}" \
        --json "$work/opt_$name.json"
    fi
    if in_list "$name" "$COUNTERS"; then
      step "$name" counters "${counters[@]}" diagnose "${workload[@]}" --counters --db "$db" \
        --json "$work/diagnose_${name}_counters.json"
    fi
    if in_list "$name" "$RECIPE"; then
      local args
      if args=$(python3 benchmarks/measured_advice_summary.py --recipe-args "$work" tests/fixtures/h200 "$name" \
        "${extra[@]}" 2>"$work/${name}_recipe_args.log"); then
        # shellcheck disable=SC2086 # the arguments are plain words (model spec, numbers, mode and precision names)
        step "$name" recipe "${recipe[@]}" diagnose $args --measure-s 0 --counters --db "$db" \
          --json "$work/diagnose_${name}_recipe.json"
      else
        printf '%s\trecipe\t\tskipped: %s\n' "$name" "$(tail -1 "$work/${name}_recipe_args.log")" >>"$times"
      fi
    fi
  done
}

{
  date -u +%FT%TZ
  [ "$device" = cuda ] && nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm --format=csv
  python3 -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda)"
  [ "$device" = cuda ] && { (ncu --version 2>/dev/null || echo "ncu: not found") | tail -1; }
  echo "LANES=$LANES DIAGNOSE=$DIAGNOSE COUNTERS=$COUNTERS OPTIMIZE=$OPTIMIZE RECIPE=$RECIPE CALIBRATE=${CALIBRATE:-} OPT_BUDGET_S=${OPT_BUDGET_S:-default} TOTAL_S=$total_s"
} >"$versions" 2>&1
cat "$versions"
printf 'name\tstep\tseconds\texit code\n' >"$times"

IFS=';' read -r -a lanes <<<"$LANES"
nlanes=${#lanes[@]}
pids=()
for i in "${!lanes[@]}"; do
  # shellcheck disable=SC2086 # a lane is a list of config names
  lane "$i" ${lanes[$i]} 2>&1 | sed -u "s/^/[lane $i] /" &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
pack
echo "== done in $(($(date +%s) - start)) s"
cat "$out/summary.md"
