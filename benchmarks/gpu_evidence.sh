#!/usr/bin/env bash
# Honest evidence and optimized steps on the H200, for docs/benchmarks/h200-evidence.md: the coverage of a recipe
# step (cudagraph+tf32, optimize's recipe for both in docs/benchmarks/h200-optimize.md) of fno2d 128 b1 and unet2d
# 128 b1 (the share of its kernel time attributed to ops and modules, before and after matching its replayed kernels
# against the eager step's), the recipe step against its roofline bound from the counters (--counters), and
# --counters' launches, passes and ncu time with and without identical launches measured once, on the patch
# transformer (repeated blocks); diagnose with --measure-s 0 (its remedies are measured elsewhere: the first H200 call, 2026-12-04, hit every limit while measuring them). Every step has its own timeout; the whole stays under 240 s; the work folder is
# packed into $OUT/evidence.tar.gz after every step, so a call cut short keeps what finished.
# Usage: OUT=/some/dir benchmarks/gpu_evidence.sh   (from the repository root)
# Then: python3 benchmarks/evidence_summary.py evidence/ > docs/benchmarks/h200-evidence.md (after unpacking)
set -uo pipefail
: "${OUT:?set OUT}"
out=/tmp/evidence
rm -rf "$out" && mkdir -p "$out"
pack() { tar -czf "${OUT}/evidence.tar.gz" --exclude '*.db' -C /tmp evidence; }
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
db=$out/h200-evidence.db
t0=$(date +%s)
step() { local name=$1 limit=$2; shift 2; echo "== $name ($(( $(date +%s) - t0 )) s in)"; local s=$(date +%s)
  timeout -s INT -k 5 "$limit" "$@" >"$out/$name.txt" 2>&1; echo "rc=$? wall_s=$(( $(date +%s) - s ))" >>"$out/$name.txt"
  tail -12 "$out/$name.txt"; pack; }
{
  date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
  python3 -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda)"
  (ncu --version 2>/dev/null || echo "ncu: not found") | tail -1
} | tee "$out/versions.txt"
recipe=(--batch 1 --precision tf32 --device cuda --warmup 10 --iters 50 --db "$db")
# coverage: the eager step and the recipe step in one run, so the replayed kernels are matched against the eager ones
for model in fno2d unet2d; do
  step "$model-coverage" 55 python3 -m surrobench diagnose --measure-s 0 --model $model --shape 128 --mode eager,cudagraph \
    "${recipe[@]}" --json "$out/$model-coverage.json"
done
# the recipe step alone (nothing to match against: its own attribution) with its counters: coverage before
# matching and the roofline headroom
step fno2d-headroom 75 python3 -m surrobench diagnose --measure-s 0 --model fno2d --shape 128 --mode cudagraph --counters \
  "${recipe[@]}" --json "$out/fno2d-headroom.json"
# --counters with and without identical launches measured once, on a step of repeated blocks
step transformer-dedup 55 python3 benchmarks/ncu_dedup.py examples/patch_transformer.py:build 128 2 fp32 eager \
  --json "$out/transformer-dedup.json"
echo "total $(( $(date +%s) - t0 )) s"
pack && ls -la "${OUT}/evidence.tar.gz"
