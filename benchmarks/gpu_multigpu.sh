#!/usr/bin/env bash
# Multi-GPU runs on one host (written for nvidia-h200-x2; any NPROC GPUs work), about 6 minutes:
#   1. replicas: fno2d and unet2d at 256/512, batch 4/8, every rank the same config, against rank 0 alone
#      (3 interleaved rounds); fno2d 256 b8 again as a CUDA graph (launch-bound: host contention goes?)
#   2. the domain-decomposed example (examples/halo_conv2d.py: 8 conv3x3, 64 channels, 4096^2) on 1 and
#      NPROC GPUs, and its split output checked against the one-GPU output
#   3. a planted straggler (examples/straggler.py): per-rank torch.profiler traces for the cross-rank
#      analysis, the same model under `run --nproc` (time waiting in the all-reduce per rank), and
#      `analyze`/`diagnose` on the trace folder
#   4. `run --devices`: an ordinary sweep spread over the GPUs, one process each, into one database
# Output: $OUT/summary.md (the tables), $OUT/log.txt (everything printed), $OUT/multigpu.tar.gz (the
# database, run JSONs, per-step texts and the rank traces).
# Usage (repository root): OUT=/some/dir bash benchmarks/gpu_multigpu.sh
#        CPU dry run:       OUT=/tmp/x DEVICE=cpu SMALL=1 bash benchmarks/gpu_multigpu.sh
set -uo pipefail
: "${OUT:?set OUT to the output folder}"
DEVICE=${DEVICE:-cuda}
NPROC=${NPROC:-2}
SMALL=${SMALL:-0}
# NVLink multicast (NVLS) must stay off on these machines.
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 COLUMNS=250
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$PWD/src
work=$(mktemp -d /tmp/surrobench-multigpu.XXXXXX)
mkdir -p "$OUT" "$work"
db=$work/multigpu.db
sb() { python3 -m surrobench "$@"; }
ranks() { python3 -m torch.distributed.run --standalone --nproc_per_node "$NPROC" "$@"; }
step() { echo; echo "=== $* ($(date -u +%T))"; }

if [ "$SMALL" = 1 ]; then  # a CPU dry run of every step in a minute or two
  rep=(--model fno2d,unet2d --shape 32 --batch 1 --warmup 2 --iters 10 --rounds 2)
  graph=(); halo=(--shape 64 --warmup 2 --iters 5); halo_size=64; rows=64; strag=(--warmup 2 --iters 5)
  spread=(--model fno2d --shape 32 --batch 1,2 --warmup 2 --iters 5)
else
  rep=(--model fno2d,unet2d --shape 256,512 --batch 4,8 --warmup 20 --iters 50 --rounds 3)
  graph=(--model fno2d --shape 256 --batch 8 --mode cudagraph --warmup 20 --iters 50 --rounds 3)
  halo=(--shape 4096 --warmup 5 --iters 20 --rounds 2); halo_size=4096; rows=16384; strag=(--warmup 5 --iters 30)
  spread=(--model fno2d,unet2d --shape 128,256 --batch 1,4 --warmup 10 --iters 50)
fi
common=(--device "$DEVICE" --db "$db")

{
step "versions"
date -u +%FT%TZ
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.max.sm --format=csv 2>/dev/null || echo "no nvidia-smi"
nvidia-smi topo -m 2>/dev/null || true
python3 -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version() if torch.cuda.is_available() else None)"
env | grep '^NCCL_' || true

step "1a. replicas, eager"
sb run --nproc "$NPROC" --parallel replicas "${rep[@]}" "${common[@]}" --tag replicas --json "$work/replicas.json" \
  | tee "$work/replicas.txt"
if [ ${#graph[@]} -gt 0 ]; then
  step "1b. replicas, fno2d as a CUDA graph"
  sb run --nproc "$NPROC" --parallel replicas "${graph[@]}" "${common[@]}" --tag replicas-cudagraph \
    --json "$work/replicas_cudagraph.json" | tee "$work/replicas_cudagraph.txt"
fi

step "2a. domain decomposition: examples/halo_conv2d.py on 1 GPU (rank 0 alone) and $NPROC"
sb run --nproc "$NPROC" --parallel model --model examples/halo_conv2d.py:build --batch 1 --input-sets 1 "${halo[@]}" \
  "${common[@]}" --tag halo --json "$work/halo.json" | tee "$work/halo.txt"
step "2b. the split output against the one-GPU output"
ranks examples/halo_conv2d.py --size "$halo_size" --device "$DEVICE" --check | tee "$work/halo_check.txt"

step "3a. planted straggler: per-rank torch.profiler traces"
ranks benchmarks/straggler_traces.py --out "$work/straggler" --rows "$rows" --device "$DEVICE" \
  | tee "$work/straggler_traces.txt"
step "3b. the same model under run --nproc (time in the all-reduce per rank)"
sb run --nproc "$NPROC" --parallel model --model examples/straggler.py:build --shape "$rows" --batch 1 "${strag[@]}" \
  "${common[@]}" --tag straggler --json "$work/straggler.json" | tee "$work/straggler.txt"
step "3c. analyze and diagnose on the trace folder (cross-rank findings where this main has them)"
sb analyze "$work/straggler" --json "$work/straggler_analyze.json" > "$work/straggler_analyze.txt" 2>&1
echo "analyze exit code $?"; tail -n 40 "$work/straggler_analyze.txt"
sb diagnose "$work/straggler" --json "$work/straggler_diagnose.json" > "$work/straggler_diagnose.txt" 2>&1
echo "diagnose exit code $?"; tail -n 40 "$work/straggler_diagnose.txt"

step "4. --devices: one sweep spread over the GPUs"
if [ "$DEVICE" = cuda ]; then
  sb run --devices "$(seq -s, 0 $((NPROC - 1)))" "${spread[@]}" "${common[@]}" --tag spread --json "$work/spread.json" \
    | tee "$work/spread.txt"
else
  sb run --nproc "$NPROC" --parallel configs "${spread[@]}" "${common[@]}" --tag spread --json "$work/spread.json" \
    | tee "$work/spread.txt"
fi
} 2>&1 | tee "$OUT/log.txt"

python3 benchmarks/multigpu_summary.py "$db" > "$OUT/summary.md" 2>&1
cat "$work"/halo_check.txt "$work"/straggler_traces.txt >> "$OUT/summary.md" 2>/dev/null
tar -czf "$OUT/multigpu.tar.gz" -C "$work" .
rm -rf "$work"
echo; cat "$OUT/summary.md"
