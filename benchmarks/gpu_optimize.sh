#!/usr/bin/env bash
# surrobench optimize on a CUDA machine, with the default budget, on the zoo models along the source text's
# ladder (grids 128², 256², 512² at batch 1; the point models at the same point counts 16,384, 65,536 and
# 262,144) and on two surrogates surrobench did not write (neuraloperator's FNO, torch_geometric's GAT).
# Each config runs `surrobench optimize --verify PAIRS`: after the search, its recipe and baseline are run
# again as fresh `surrobench run` processes, order alternating (B R, R B, ...), and judged against the
# optimize CI (src/surrobench/results/fresh.py). PAIRS is 3 for the launch-bound configs, else 2.
#
# Three parts of under 9 minutes each on one H200:
#   OUT=/some/dir bash benchmarks/gpu_optimize.sh 1    # fno2d ladder, deeponet ladder, neuraloperator FNO 256
#   OUT=/some/dir bash benchmarks/gpu_optimize.sh 2    # unet2d ladder, pinn-mlp ladder
#   OUT=/some/dir bash benchmarks/gpu_optimize.sh 3    # meshgraphnet ladder, torch_geometric GAT 65,536 nodes
# Trial on a CPU:  DEVICE=cpu TINY=1 OUT=/tmp/x bash benchmarks/gpu_optimize.sh 1
#
# What comes back under $OUT: optimize-partN.tar.gz (per config opt-NAME.json/.md/.txt, the optimize report
# with its `fresh` object), summary-partN.md (benchmarks/optimize_summary.py: the recipes with the optimize
# and the fresh-process speedups, then every candidate with verdict, speedup, top op, rel L2, setup and time),
# log-partN.txt (everything printed).
set -uo pipefail
part=${1:?usage: benchmarks/gpu_optimize.sh 1|2|3}
: "${OUT:?set OUT to the output folder}"
DEVICE=${DEVICE:-cuda}
TINY=${TINY:-0}
dir=$OUT/optimize-part$part
mkdir -p "$dir"
export PYTHONPATH=/tmp/site:$PWD/src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
db=$dir/optimize.db
extra=()
[ "$TINY" = 1 ] && extra=(--budget-s 20 --rounds 2 --warmup 1 --iters 5)

opt() {  # NAME PAIRS then optimize's workload options
  local name=$1 pairs=$2; shift 2
  local t0=$SECONDS
  echo "== optimize $name (--verify $pairs): $*"
  timeout 540 python3 -m surrobench optimize "$@" --device "$DEVICE" --db "$db" --verify "$pairs" "${extra[@]}" \
    --json "$dir/opt-$name.json" --markdown "$dir/opt-$name.md" 2>&1 | grep -v '^USDT:' | tee "$dir/opt-$name.txt"
  echo "== optimize $name took $((SECONDS - t0)) s"
}

ladder() {  # MODEL PAIRS SIZE... : one config per rung at batch 1
  local model=$1 pairs=$2; shift 2
  for size in "$@"; do opt "$model-$size" "$pairs" --model "$model" --shape "$size" --batch 1; done
}

has() { python3 -c "import $1" 2>/dev/null || { echo "== skipped: python module $1 missing"; return 1; }; }

if [ "$TINY" = 1 ]; then grid=(16 32); points=(1024 4096); else grid=(128 256 512); points=(16384 65536 262144); fi
{
  date -u +%FT%TZ
  [ "$DEVICE" = cuda ] && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
  python3 -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda)"
  start=$SECONDS
  case "$part" in
    1)
      ladder fno2d 3 "${grid[@]}"
      ladder deeponet 2 "${points[@]}"
      has neuralop && opt neuralop_fno 3 --model examples/neuralop_fno.py:build_fno --shape "${grid[1]}" --batch 1
      ;;
    2)
      ladder unet2d 2 "${grid[@]}"
      ladder pinn-mlp 2 "${points[@]}"
      ;;
    3)
      ladder meshgraphnet 2 "${points[@]}"
      has torch_geometric && opt pyg_gat 2 --model examples/pyg_gat.py:build --shape "${points[1]}" --batch 1
      ;;
  esac
  echo "== part $part took $((SECONDS - start)) s"
} 2>&1 | tee "$OUT/log-part$part.txt"
python3 benchmarks/optimize_summary.py "$dir" | tee "$OUT/summary-part$part.md"
rm -f "$db"  # the reports hold every number; the database would push the tarball past what comes back
tar -czf "$OUT/optimize-part$part.tar.gz" -C "$OUT" "optimize-part$part" && rm -rf "$dir"
