#!/usr/bin/env bash
# Hardware counters on the H200, for docs/benchmarks/h200-counters.md (one device call, under 10 minutes):
#   0. `surrobench calibrate` (the ceilings the roofline points and verdicts are read against);
#   1. the planted kernels under ncu (truth known: benchmarks/planted_kernels.py), read by surrobench's parser;
#   2. `surrobench diagnose --counters` at one GPU-bound size each: the zoo, neuraloperator's FNO,
#      torch_geometric's GAT, the patch transformer (outside the zoo; the nn.TransformerEncoder fast path and
#      the SDPA build); per config the counters' cost (s, passes) is in each diagnose JSON
#      (context.counters.<config>.ncu_wall_s / passes). The U-Net, neuraloperator FNO and transformer configs
#      are the ones benchmarks/gpu_optimize.sh `compile` optimizes, for the check against optimize.
# Each step has its own timeout; the work folder is packed into $OUT/counters.tar.gz after every step (the
# traces left out), so a call cut short keeps what finished.
# Needs neuraloperator, tensorly, tensorly-torch (and msgspec) as wheels in .whl (docs/benchmarks/h200-counters.md).
# Usage (repository root, on the GPU machine): OUT=/path bash benchmarks/gpu_counters.sh
#   ONLY="unet2d gat" ... runs calibrate and those diagnoses alone (no planted kernels).
set -uo pipefail
: "${OUT:?set OUT}"
out=/tmp/counters
rm -rf "$out" && mkdir -p "$out"
export PYTHONPATH=/tmp/site:$PWD/src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 COLUMNS=200
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
export NCU
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; "$NCU" --version
  uname -r; python3 -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__)"; } \
  > "$out/versions.txt" 2>&1
pack() { tar -czf "$OUT/counters.tar.gz" --exclude 'traces_*' --exclude '*.db' -C /tmp counters; }
step() {  # name, cap seconds, command...
  local name=$1 cap=$2; shift 2
  local t0; t0=$(date +%s)
  timeout -k 5 "$cap" "$@" > "$out/$name.txt" 2>&1
  echo "$name rc=$? $(( $(date +%s) - t0 )) s" | tee -a "$out/steps.txt"
  pack
}
step calibrate 90 python3 -m surrobench calibrate --device cuda --json "$out/calibrate.json"
grep -q "calibrate rc=0" "$out/steps.txt" || step calibrate_force 90 python3 -m surrobench calibrate --device cuda \
  --force --json "$out/calibrate.json"
ONLY=${ONLY:-}
if [ -z "$ONLY" ]; then
metrics=$(python3 -c "from surrobench.collect.ncu import METRICS; print(','.join(METRICS))")
step planted_ncu 120 "$NCU" --nvtx --nvtx-include "planted/" --csv --print-units base --print-kernel-base demangled \
  --clock-control none --cache-control all --page raw --metrics "$metrics" --log-file "$out/planted_raw.csv" \
  python3 benchmarks/planted_kernels.py
step planted_read 30 python3 benchmarks/counters_table.py "$out/planted_raw.csv" \
  elementwise,add,transpose_copy,gemm_bf16,gemm_tf32,gemm_fp32,tiny_grid
fi
diag() {  # name, cap, diagnose arguments...
  local name=$1 cap=$2; shift 2
  [ -z "$ONLY" ] || [[ " $ONLY " == *" $name "* ]] || return 0
  step "diagnose_$name" "$cap" python3 -m surrobench diagnose "$@" --device cuda --counters --explain \
    --db "$out/counters.db" --trace-out "$out/traces_$name" --json "$out/diagnose_$name.json"
}
diag transformer 90 --model examples/patch_transformer.py:build --shape 256 --batch 8
diag fno2d 90 --model fno2d --shape 256 --batch 8
diag unet2d 150 --model unet2d --shape 256 --batch 8
diag neuralop_fno 150 --model examples/neuralop_fno.py:build_fno --shape 512 --batch 8
diag gat 150 --model examples/pyg_gat.py:build --shape 65536 --batch 1
diag meshgraphnet 150 --model meshgraphnet --shape 65536 --batch 1
diag deeponet 45 --model deeponet --shape 16384 --batch 64
diag pinn 45 --model pinn-mlp --shape 65536 --batch 1
diag transformer_sdpa 60 --model examples/patch_transformer.py:build_sdpa --shape 256 --batch 8
step summary 20 python3 - "$out" <<'PY'
import json, pathlib, sys
for path in sorted(pathlib.Path(sys.argv[1]).glob("diagnose_*.json")):
    doc = json.loads(path.read_text())
    for label, c in doc["context"].get("counters", {}).items():
        problem = (c.get("problem") or {}).get("message")
        print(f"{label}: {len(c['kernels'])} launches, {c['passes']} passes, {c['ncu_wall_s'] or 0:.1f} s, "
              f"covered {c['covered_share'] or 0:.0%}{' PROBLEM ' + problem if problem else ''}")
    for f in doc["findings"][:4]:
        print(f"  {f['kind']:16s} {f['severity']:6s} {f['evidence_source']:26s} gain {f['estimated_gain_ms']} | {f['summary'][:110]}")
PY
cat "$out/steps.txt"
