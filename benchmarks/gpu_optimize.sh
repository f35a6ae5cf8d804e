#!/usr/bin/env bash
# surrobench optimize on a CUDA machine, with the default budget, on the zoo models at the source text's
# ladder sizes and on two surrogates surrobench did not write (neuraloperator's FNO, torch_geometric's GAT);
# then, per config with a recipe, a fresh pair of `surrobench run` processes (baseline, recipe; --rounds 3)
# and `surrobench compare` on them: does the speedup reproduce within the optimize CI?
#
# Two parts of under 9 minutes each on one H200 (run both):
#   OUT=/some/dir bash benchmarks/gpu_optimize.sh 1    # unet2d 512 b1, meshgraphnet 65536 b1
#   OUT=/some/dir bash benchmarks/gpu_optimize.sh 2    # fno2d 128 b1, pinn-mlp 262144 b1, deeponet 65536 b1,
#                                                      # neuraloperator FNO 256 b1, torch_geometric GAT 65536 b1
# Trial on a CPU:  DEVICE=cpu TINY=1 OUT=/tmp/x bash benchmarks/gpu_optimize.sh 2
#
# What comes back under $OUT: optimize-partN.tar.gz (per config opt-NAME.json/.md/.txt = the optimize
# report, verify-NAME.json = compare of the fresh runs, the SQLite database), summary-partN.md (the
# tables printed last: recipe, optimize speedup and CI, fresh-run speedup, reproduced yes/no, then every
# candidate with verdict, speedup, rel L2, setup and time), log-partN.txt (everything printed).
set -uo pipefail
part=${1:?usage: benchmarks/gpu_optimize.sh 1|2}
: "${OUT:?set OUT to the output folder}"
DEVICE=${DEVICE:-cuda}
TINY=${TINY:-0}
dir=$OUT/optimize-part$part
mkdir -p "$dir"
export PYTHONPATH=/tmp/site:$PWD/src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
db=$dir/optimize.db
extra=()
[ "$TINY" = 1 ] && extra=(--budget-s 20 --rounds 2 --warmup 1 --iters 5)

opt() {  # NAME then optimize's workload options
  local name=$1; shift
  local t0=$SECONDS
  echo "== optimize $name: $*"
  timeout 420 python3 -m surrobench optimize "$@" --device "$DEVICE" --db "$db" "${extra[@]}" \
    --json "$dir/opt-$name.json" --markdown "$dir/opt-$name.md" 2>&1 | tee "$dir/opt-$name.txt"
  echo "== optimize $name took $((SECONDS - t0)) s"
  verify "$name"
}

verify() {  # fresh runs of the baseline and the recipe, three rounds each, then compare
  local name=$1 cmds base recipe
  [ -f "$dir/opt-$name.json" ] || return
  cmds=$(python3 -c "import json,sys; c=json.load(open(sys.argv[1]))['configs'][0]['recipe']; print(c['baseline_command']); print(c['run_command'] or '')" "$dir/opt-$name.json")
  base=$(sed -n 1p <<<"$cmds"); recipe=$(sed -n 2p <<<"$cmds")
  [ -n "$recipe" ] || { echo "== $name: no recipe, nothing to verify"; return; }
  local rounds=3; [ "$TINY" = 1 ] && rounds=2
  echo "== verify $name: $recipe"
  eval "timeout 200 python3 -m $base --rounds $rounds --db '$db' --json '$dir/vb-$name.json' --tag verify-base" >/dev/null 2>&1
  eval "timeout 200 python3 -m $recipe --rounds $rounds --db '$db' --json '$dir/vr-$name.json' --tag verify-recipe" >/dev/null 2>&1
  if [ -f "$dir/vb-$name.json" ] && [ -f "$dir/vr-$name.json" ]; then
    python3 -m surrobench compare "$dir/vb-$name.json" "$dir/vr-$name.json" --ignore-field precision,mode \
      --json "$dir/verify-$name.json" | tail -n 8
  else
    echo "== verify $name: a fresh run failed (see the database)"
  fi
}

has() { python3 -c "import $1" 2>/dev/null || { echo "== skipped: python module $1 missing"; return 1; }; }

{
  date -u +%FT%TZ
  [ "$DEVICE" = cuda ] && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
  python3 -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda)"
  start=$SECONDS
  if [ "$part" = 1 ]; then
    if [ "$TINY" = 1 ]; then
      opt unet2d --model unet2d --shape 32 --batch 1
      opt meshgraphnet --model meshgraphnet --shape 1024 --batch 1
    else
      opt unet2d --model unet2d --shape 512 --batch 1
      opt meshgraphnet --model meshgraphnet --shape 65536 --batch 1
    fi
  else
    if [ "$TINY" = 1 ]; then s_fno=32; s_pinn=4096; s_don=4096; s_nop=32; s_gat=2048; else
      s_fno=128; s_pinn=262144; s_don=65536; s_nop=256; s_gat=65536; fi
    opt fno2d --model fno2d --shape $s_fno --batch 1
    opt pinn --model pinn-mlp --shape $s_pinn --batch 1
    opt deeponet --model deeponet --shape $s_don --batch 1
    has neuralop && opt neuralop_fno --model examples/neuralop_fno.py:build_fno --shape $s_nop --batch 1
    has torch_geometric && opt pyg_gat --model examples/pyg_gat.py:build --shape $s_gat --batch 1
  fi
  echo "== part $part took $((SECONDS - start)) s"
} 2>&1 | tee "$OUT/log-part$part.txt"
python3 benchmarks/optimize_summary.py "$dir" | tee "$OUT/summary-part$part.md"
tar -czf "$OUT/optimize-part$part.tar.gz" -C "$OUT" "optimize-part$part" && rm -rf "$dir"
