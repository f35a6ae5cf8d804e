#!/usr/bin/env bash
# Capacity you can plan on, on the H200 (docs/benchmarks/h200-capacity.md): per setting, `serve --find-max` at
# P99 <= 5 ms (batch-1 requests at 128², max batch 8, max wait 1 ms, Poisson arrivals, 2 s per rate): the
# unloaded latency, the predicted capacity and the one measured under load around it; `optimize --objective
# capacity` on unet2d and fno2d (remedies cudagraph, tf32; max batch 1 or 8, wait 0.5, 1 or 2 ms: the latency
# recipe's policy among them) against the latency recipe's serve run under the same load (batch <= 8, wait <= 1 ms);
# an infeasible target (unet2d eager at P99 <= 1 ms) answered and timed.
# optimize's verifying loads leave out their first min(1 s, a quarter of the duration) (serve's default warm-up).
# Every step has its own timeout, the whole a budget of $TOTAL s (default 370: with the 10 s kill grace of a step
# cut at the end and the packing, under 400 s); a step that would not fit is skipped. The work folder is packed into $OUT/capacity.tar.gz after every step.
# Usage: OUT=/some/dir bash benchmarks/gpu_capacity.sh [SETTING ...]          (from the repository root)
#   SETTING, in the order run by default: unet2d-eager unet2d-recipe opt-unet2d fno2d-eager fno2d-recipe opt-fno2d
#   transformer-eager transformer-recipe deeponet-eager deeponet-recipe infeasible; also afno-eager (examples/afno.py at
#   P99 <= 10 ms, the 2026-12-04 trial's target). Give fewer to trim it.
#   Dry run on a CPU (bf16 for the recipe, threads=1 the remedy searched):
#   DEVICE=cpu SHAPE=16 DUR=0.5 WARM=0.1 P99=100 OUT=/tmp/o bash benchmarks/gpu_capacity.sh unet2d-eager opt-unet2d
# Then: PYTHONPATH=src python3 benchmarks/capacity_summary.py /tmp/capacity > table.md
set -uo pipefail
: "${OUT:?set OUT}"
out=/tmp/capacity
rm -rf "$out" && mkdir -p "$out"
pack() { tar -czf "${OUT}/capacity.tar.gz" --exclude '*.db' -C /tmp capacity; }
export PYTHONPATH=${SRC:-$PWD/src}${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1  # SRC: another copy of src (an A/B)
db=$out/h200-capacity.db
DEVICE=${DEVICE:-cuda}; SHAPE=${SHAPE:-128}; DUR=${DUR:-2}; WARM=${WARM:-0.5}; P99=${P99:-5}; TOTAL=${TOTAL:-370}
began=$(date +%s)
step() {  # step NAME LIMIT_S ARGS...: one surrobench command, its JSON, text and wall time
  local name=$1 limit=$2; shift 2
  local left=$((TOTAL - ($(date +%s) - began)))
  if [ "$left" -lt 25 ]; then echo "== $name skipped: ${left} s left of $TOTAL" | tee "$out/$name.txt"; return; fi
  [ "$limit" -gt "$left" ] && limit=$left
  echo "== $name (limit $limit s)"
  local t0 t1; t0=$(date +%s.%N)
  timeout -s INT -k 10 "$limit" python3 -m surrobench "$@" --db "$db" --json "$out/$name.json" >"$out/$name.txt" 2>&1
  local rc=$?; t1=$(date +%s.%N)
  echo "rc=$rc wall_s=$(awk "BEGIN {print $t1 - $t0}")" >>"$out/$name.txt"; tail -8 "$out/$name.txt"; pack
}
{
  date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv 2>/dev/null
  python3 -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda)"
} | tee "$out/versions.txt"
load=(--shape "$SHAPE" --device "$DEVICE" --duration-s "$DUR")
serve5=(serve "${load[@]}" --warmup-s "$WARM" --find-max --p99-ms "$P99" --max-batch 8 --max-wait-ms 1)
recipe=(--mode cudagraph --precision tf32)
[ "$DEVICE" = cpu ] && recipe=(--precision bf16)
only=cudagraph,tf32
[ "$DEVICE" = cpu ] && only=threads=1
opt=(optimize "${load[@]}" --objective capacity --p99-ms "$P99" --only "$only" --max-batch 1,8 --max-wait-ms 0.5,1,2)
settings=("$@")
[ ${#settings[@]} -eq 0 ] && settings=(unet2d-eager unet2d-recipe opt-unet2d fno2d-eager fno2d-recipe opt-fno2d
  transformer-eager transformer-recipe deeponet-eager deeponet-recipe infeasible)
for s in "${settings[@]}"; do
  case $s in
    fno2d-eager) step "$s" 150 "${serve5[@]}" --model fno2d --tag "fno2d eager" ;;
    fno2d-recipe) step "$s" 60 "${serve5[@]}" --model fno2d "${recipe[@]}" --tag "fno2d cudagraph+tf32" ;;
    unet2d-eager) step "$s" 60 "${serve5[@]}" --model unet2d --tag "unet2d eager" ;;
    unet2d-recipe) step "$s" 60 "${serve5[@]}" --model unet2d "${recipe[@]}" --tag "unet2d cudagraph+tf32" ;;
    deeponet-eager) step "$s" 60 "${serve5[@]}" --model deeponet --tag "deeponet eager" ;;
    deeponet-recipe) step "$s" 60 "${serve5[@]}" --model deeponet "${recipe[@]}" --tag "deeponet cudagraph+tf32" ;;
    transformer-eager) step "$s" 60 "${serve5[@]}" --model examples/patch_transformer.py:build --tag "transformer eager" ;;
    transformer-recipe) step "$s" 60 "${serve5[@]}" --model examples/patch_transformer.py:build "${recipe[@]}" \
      --tag "transformer cudagraph+tf32" ;;
    afno-eager) step "$s" 90 serve "${load[@]}" --warmup-s "$WARM" --model examples/afno.py:build --find-max --p99-ms 10 \
      --max-batch 8 --max-wait-ms 1 --tag "afno eager" ;;
    infeasible) step "$s" 40 serve "${load[@]}" --warmup-s "$WARM" --model unet2d --find-max --p99-ms 1 --max-batch 8 --max-wait-ms 1 \
      --tag "unet2d eager infeasible" ;;
    opt-fno2d) step "$s" 150 "${opt[@]}" --model fno2d ;;
    opt-unet2d) step "$s" 150 "${opt[@]}" --model unet2d ;;
    *) echo "unknown setting $s (known: see the header)" | tee -a "$out/unknown.txt" ;;
  esac
done
echo "total wall s: $(($(date +%s) - began))" | tee "$out/total.txt"
cp "$db" "$out/h200-capacity.sqlite" 2>/dev/null
tar -czf "${OUT}/capacity.tar.gz" -C /tmp capacity && ls -la "${OUT}/capacity.tar.gz"
