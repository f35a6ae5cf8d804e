#!/usr/bin/env bash
# surrobench optimize on a CUDA machine, with the default budget, on the zoo models along the source text's
# ladder (grids 128², 256², 512² at batch 1; the point models at the same point counts 16,384, 65,536 and
# 262,144) and on two surrogates surrobench did not write (neuraloperator's FNO, torch_geometric's GAT).
# A config with PAIRS > 0 runs `surrobench optimize --verify PAIRS`: after the search, its recipe and
# baseline are run again as fresh `surrobench run` processes, order alternating (B R, R B, ...), and judged
# against optimize's CI and replication interval (src/surrobench/results/optimize.py); 3 pairs for the
# launch-bound configs, 2 for others, none where the device budget of one call did not allow it. The search
# itself times its recipe in `--processes` pairs of fresh processes too (default 2).
#
# Four parts of under 9 minutes each on one H200:
#   OUT=/some/dir bash benchmarks/gpu_optimize.sh 1    # fno2d ladder, neuraloperator FNO 256
#   OUT=/some/dir bash benchmarks/gpu_optimize.sh 2    # unet2d ladder, deeponet 262,144
#   OUT=/some/dir bash benchmarks/gpu_optimize.sh 3    # pinn-mlp ladder, torch_geometric GAT 65,536 nodes
#   OUT=/some/dir bash benchmarks/gpu_optimize.sh 4    # meshgraphnet ladder, deeponet 16,384 and 65,536
# The launch-bound rungs (sub-millisecond eager forwards, CUDA-graph recipes) and one GPU-bound rung again:
#   OUT=/some/dir bash benchmarks/gpu_optimize.sh 5    # deeponet 65,536 and 16,384, fno2d 256²
#   OUT=/some/dir bash benchmarks/gpu_optimize.sh 6    # fno2d 128², neuraloperator FNO 256
#   OUT=/some/dir bash benchmarks/gpu_optimize.sh 7    # meshgraphnet 16,384, unet2d 512² (GPU-bound, compiled)
# The ladder rungs whose recipe was never checked in fresh processes, and U-Net 512² under the final rule:
#   OUT=/some/dir bash benchmarks/gpu_optimize.sh 8    # unet2d 128², pinn-mlp 16,384
#   OUT=/some/dir bash benchmarks/gpu_optimize.sh 9    # pinn-mlp 65,536, deeponet 262,144
#   OUT=/some/dir bash benchmarks/gpu_optimize.sh 10   # unet2d 512², torch_geometric GAT 65,536 nodes
# The three configs whose recipe holds torch.compile, at batch 8, with every default (fresh processes included;
# each must end within 3 minutes): the patch transformer 256², U-Net 256², neuraloperator FNO 512²:
#   OUT=/some/dir bash benchmarks/gpu_optimize.sh compile
#   OUT=/some/dir bash benchmarks/gpu_optimize.sh recheck    # U-Net 256² b8 again, pinn-mlp 65,536, defaults
# Every ladder rung again on the new core, every default (fresh processes, the 150 s budget), each config stopped
# by `timeout` at 185 s; six parts of at most 555 s of configs each:
#   OUT=/some/dir bash benchmarks/gpu_optimize.sh core1      # U-Net 256² b8 again, unet2d 512², GAT 65,536 nodes
#   OUT=/some/dir bash benchmarks/gpu_optimize.sh core2      # meshgraphnet ladder
#   OUT=/some/dir bash benchmarks/gpu_optimize.sh core3      # unet2d 128² and 256², fno2d 128²
#   OUT=/some/dir bash benchmarks/gpu_optimize.sh core4      # fno2d 256² and 512², neuraloperator FNO 256²
#   OUT=/some/dir bash benchmarks/gpu_optimize.sh core5      # deeponet ladder
#   OUT=/some/dir bash benchmarks/gpu_optimize.sh core6      # pinn-mlp 16,384 and 262,144
#   OUT=/some/dir bash benchmarks/gpu_optimize.sh fixes      # the three core1/core2 left below their recipe
# The configs `diagnose --counters` read (docs/benchmarks/h200-counters.md) that had no optimize run, searched
# in-process only (--processes 0, --budget-s 120), for the check of the diagnosis against optimize:
#   OUT=/some/dir bash benchmarks/gpu_optimize.sh counters   # fno2d 256² b8, deeponet 16,384 b64, SDPA transformer
# The PINN 65,536 rung (after `ONLY=pinn benchmarks/gpu_counters.sh` in the same call: the host's floor under its
# TF32 gain) and the GAT under the head-to-head tie-break, every default, each stopped at 185 s:
#   OUT=/some/dir bash benchmarks/gpu_optimize.sh hostfloor
# The two rungs whose last stack sat at the rule's 2% margin on the new core, every default, stopped at 185 s:
#   OUT=/some/dir bash benchmarks/gpu_optimize.sh margin1    # neuraloperator FNO 256
#   OUT=/some/dir bash benchmarks/gpu_optimize.sh margin2    # unet2d 256
# One zoo config at batch 1, to measure a rung again:
#   OUT=/some/dir bash benchmarks/gpu_optimize.sh one MODEL SIZE PAIRS
# Trial on a CPU:  DEVICE=cpu TINY=1 OUT=/tmp/x bash benchmarks/gpu_optimize.sh 1
#
# What comes back under $OUT: optimize-partN.tar.gz (per config opt-NAME.json/.md/.txt, the optimize report
# with its `fresh` object; rewritten after every config, so a call cut short keeps what it finished), summary-optimize-partN.md (benchmarks/optimize_summary.py: the recipes with the optimize
# and the fresh-process speedups, then every candidate with verdict, speedup, top op, rel L2, setup and time),
# log-optimize-partN.txt (everything printed); for `one`, optimize-MODEL-SIZE in place of optimize-partN.
set -uo pipefail
part=${1:?usage: benchmarks/gpu_optimize.sh 1-10|compile|recheck|core1-6|fixes|counters|hostfloor|margin1|margin2|one MODEL SIZE PAIRS}
: "${OUT:?set OUT to the output folder}"
DEVICE=${DEVICE:-cuda}
TINY=${TINY:-0}
name=optimize-part$part
[ "$part" = one ] && name=optimize-${2:?MODEL}-${3:?SIZE}
dir=/tmp/$name  # outside $OUT: only the tarball, refreshed after every config, comes back
rm -rf "$dir" && mkdir -p "$dir" "$OUT"
export PYTHONPATH=/tmp/site:$PWD/src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
db=$dir/optimize.db
extra=()
[ "$TINY" = 1 ] && extra=(--budget-s 20 --rounds 2 --warmup 1 --iters 5)

opt() {  # NAME PAIRS then optimize's workload options
  local config=$1 pairs=$2; shift 2
  local t0=$SECONDS
  echo "== optimize $config (--verify $pairs): $*"
  timeout "${LIMIT_S:-540}" python3 -m surrobench optimize "$@" --device "$DEVICE" --db "$db" --verify "$pairs" "${extra[@]}" \
    --json "$dir/opt-$config.json" --markdown "$dir/opt-$config.md" 2>&1 | grep -v '^USDT:' | tee "$dir/opt-$config.txt"
  echo "== optimize $config took $((SECONDS - t0)) s"
  tar -czf "$OUT/$name.tar.gz" --exclude optimize.db -C /tmp "$name"  # what is done survives a timeout
}

rung() {  # MODEL SIZE PAIRS: one config at batch 1
  opt "$1-$2" "$3" --model "$1" --shape "$2" --batch 1
}

has() { python3 -c "import $1" 2>/dev/null || { echo "== skipped: python module $1 missing"; return 1; }; }

if [ "$TINY" = 1 ]; then grid=(16 24 32); points=(1024 2048 4096); else grid=(128 256 512); points=(16384 65536 262144); fi
{
  date -u +%FT%TZ
  [ "$DEVICE" = cuda ] && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
  python3 -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda)"
  start=$SECONDS
  case "$part" in
    1)
      rung fno2d "${grid[0]}" 3; rung fno2d "${grid[1]}" 2; rung fno2d "${grid[2]}" 2
      has neuralop && opt neuralop_fno 3 --model examples/neuralop_fno.py:build_fno --shape "${grid[1]}" --batch 1
      ;;
    2)
      rung unet2d "${grid[0]}" 0; rung unet2d "${grid[1]}" 0; rung unet2d "${grid[2]}" 2
      rung deeponet "${points[2]}" 0
      ;;
    3)
      rung pinn-mlp "${points[0]}" 0; rung pinn-mlp "${points[1]}" 0; rung pinn-mlp "${points[2]}" 2
      has torch_geometric && opt pyg_gat 2 --model examples/pyg_gat.py:build --shape "${points[1]}" --batch 1
      ;;
    4)
      rung meshgraphnet "${points[0]}" 0; rung meshgraphnet "${points[1]}" 2; rung meshgraphnet "${points[2]}" 0
      rung deeponet "${points[0]}" 2; rung deeponet "${points[1]}" 2
      ;;
    5)
      rung deeponet "${points[1]}" 3; rung fno2d "${grid[1]}" 3; rung deeponet "${points[0]}" 3
      ;;
    6)
      rung fno2d "${grid[0]}" 3
      has neuralop && opt neuralop_fno 3 --model examples/neuralop_fno.py:build_fno --shape "${grid[1]}" --batch 1
      ;;
    7)
      rung meshgraphnet "${points[0]}" 2; rung unet2d "${grid[2]}" 2
      ;;
    8)
      rung unet2d "${grid[0]}" 3; rung pinn-mlp "${points[0]}" 3
      ;;
    9)
      rung pinn-mlp "${points[1]}" 3; rung deeponet "${points[2]}" 2
      ;;
    10)
      rung unet2d "${grid[2]}" 2
      has torch_geometric && opt pyg_gat 2 --model examples/pyg_gat.py:build --shape "${points[1]}" --batch 1
      ;;
    compile)  # stopped at 185 s: past the 3 minutes a config may take, the search is cut (its report stays)
      LIMIT_S=185 opt transformer-256-b8 0 --model examples/patch_transformer.py:build --shape "${grid[1]}" --batch 8
      LIMIT_S=185 opt unet2d-256-b8 0 --model unet2d --shape "${grid[1]}" --batch 8
      has neuralop && LIMIT_S=185 opt neuralop_fno-512-b8 0 --model examples/neuralop_fno.py:build_fno \
        --shape "${grid[2]}" --batch 8
      ;;
    recheck)  # after the deadline left the confirmation its time: the U-Net 256² b8 again, and the PINN 65,536 rung
      LIMIT_S=185 opt unet2d-256-b8 0 --model unet2d --shape "${grid[1]}" --batch 8
      LIMIT_S=185 rung pinn-mlp "${points[1]}" 0
      ;;
    core1)  # each config stopped at 185 s: past the 3 minutes a config may take, the search is cut (its report stays)
      LIMIT_S=185 opt unet2d-256-b8 0 --model unet2d --shape "${grid[1]}" --batch 8
      LIMIT_S=185 rung unet2d "${grid[2]}" 0
      has torch_geometric && LIMIT_S=185 opt pyg_gat 0 --model examples/pyg_gat.py:build --shape "${points[1]}" --batch 1
      ;;
    core2)
      for n in "${points[@]}"; do LIMIT_S=185 rung meshgraphnet "$n" 0; done
      ;;
    core3)
      LIMIT_S=185 rung unet2d "${grid[0]}" 0; LIMIT_S=185 rung unet2d "${grid[1]}" 0; LIMIT_S=185 rung fno2d "${grid[0]}" 0
      ;;
    core4)
      LIMIT_S=185 rung fno2d "${grid[1]}" 0; LIMIT_S=185 rung fno2d "${grid[2]}" 0
      has neuralop && LIMIT_S=185 opt neuralop_fno 0 --model examples/neuralop_fno.py:build_fno --shape "${grid[1]}" --batch 1
      ;;
    core5)
      for n in "${points[@]}"; do LIMIT_S=185 rung deeponet "$n" 0; done
      ;;
    core6)
      LIMIT_S=185 rung pinn-mlp "${points[0]}" 0; LIMIT_S=185 rung pinn-mlp "${points[2]}" 0
      ;;
    fixes)  # after the search's fixes: U-Net 256² b8, meshgraphnet 262,144, GAT 65,536 nodes, each stopped at 185 s
      LIMIT_S=185 opt unet2d-256-b8 0 --model unet2d --shape "${grid[1]}" --batch 8
      LIMIT_S=185 rung meshgraphnet "${points[2]}" 0
      has torch_geometric && LIMIT_S=185 opt pyg_gat 0 --model examples/pyg_gat.py:build --shape "${points[1]}" --batch 1
      ;;
    counters)  # the configs `diagnose --counters` read whose check against optimize had no optimize run
      LIMIT_S=150 opt fno2d-256-b8 0 --model fno2d --shape "${grid[1]}" --batch 8 --processes 0 --budget-s 120
      LIMIT_S=150 opt deeponet-16384-b64 0 --model deeponet --shape "${points[0]}" --batch 64 --processes 0 \
        --budget-s 120
      LIMIT_S=150 opt transformer_sdpa-256-b8 0 --model examples/patch_transformer.py:build_sdpa \
        --shape "${grid[1]}" --batch 8 --processes 0 --budget-s 120
      ;;
    hostfloor)
      LIMIT_S=185 rung pinn-mlp "${points[1]}" 0
      has torch_geometric && LIMIT_S=185 opt pyg_gat 0 --model examples/pyg_gat.py:build --shape "${points[1]}" --batch 1
      ;;
    margin1)
      has neuralop && LIMIT_S=185 opt neuralop_fno 0 --model examples/neuralop_fno.py:build_fno --shape "${grid[1]}" --batch 1
      ;;
    margin2)
      LIMIT_S=185 rung unet2d "${grid[1]}" 0
      ;;
    one)
      rung "$2" "$3" "${4:?PAIRS}"
      ;;
  esac
  echo "== part $part took $((SECONDS - start)) s"
} 2>&1 | tee "$OUT/log-$name.txt"
python3 benchmarks/optimize_summary.py "$dir" | tee "$OUT/summary-$name.md"
