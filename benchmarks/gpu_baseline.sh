#!/usr/bin/env bash
# Issue 2 on a CUDA machine: the source text's ladder, the other zoo models, a model surrobench did not
# write (torch_geometric GraphSAGE via module:factory), all three execution modes, the Timer cross-check
# and the harness overhead. Usage: benchmarks/gpu_baseline.sh OUT_DIR   (from the repository root)
set -uo pipefail
out=${1:?usage: benchmarks/gpu_baseline.sh OUT_DIR}
mkdir -p "$out"
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
sb() { python3 -m surrobench "$@"; }
db=$out/h200.db
{
  date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
  python3 -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
} | tee "$out/versions.txt"
sb run --model fno2d,unet2d --shape 128,256,512 --batch 1,2,4,8 --precision fp32,fp16 --device cuda \
  --db "$db" --json "$out/ladder.json" --tag ladder | tee "$out/ladder.txt"
sb run --model pinn-mlp --shape 16384,262144 --batch 1,8 --precision fp32,bf16 --device cuda \
  --db "$db" --json "$out/pinn.json" --tag pinn | tee "$out/pinn.txt"
sb run --model meshgraphnet,deeponet --shape 4096,65536 --batch 1,8 --precision fp32,bf16 --device cuda \
  --db "$db" --json "$out/graph.json" --tag graph | tee "$out/graph.txt"
sb run --model examples/pyg_graphsage.py:build --shape 10000,100000 --batch 1,4 --precision fp32 --device cuda \
  --db "$db" --json "$out/pyg.json" --tag pyg | tee "$out/pyg.txt"
sb run --model fno2d --shape 128 --batch 1,8 --precision fp32 --mode eager,compile,cudagraph --device cuda \
  --db "$db" --json "$out/modes.json" --tag modes 2>&1 | tee "$out/modes.txt"
python3 benchmarks/timer_crosscheck.py --model fno2d --shape 256 --batch 1 --device cuda | tee "$out/timer.txt"
python3 benchmarks/timer_crosscheck.py --model unet2d --shape 512 --batch 8 --device cuda | tee -a "$out/timer.txt"
python3 benchmarks/harness_overhead.py --iters 2000 | tee "$out/overhead.txt"
