#!/usr/bin/env bash
# Hardware counters on the H200, for docs/benchmarks/h200-counters.md:
#   1. the planted kernels under ncu (truth known: benchmarks/planted_kernels.py), read by surrobench's parser;
#   2. `surrobench diagnose --counters` at one GPU-bound size each: the zoo, neuraloperator's FNO,
#      torch_geometric's GAT, the patch transformer (outside the zoo); per config the counters' cost (s, passes)
#      is in each diagnose JSON (context.counters.<config>.ncu_wall_s / passes);
#   3. `surrobench optimize` on the transformer, to check the diagnosis against the measured remedies.
# Each step has its own timeout (total under 9 minutes); everything is written under $OUT/counters and packed last.
# Usage (repository root, on the GPU machine): OUT=/path bash benchmarks/gpu_counters.sh
set -uo pipefail
out=${OUT:?set OUT}/counters
mkdir -p "$out"
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 COLUMNS=200
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
export NCU
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version --format=csv; "$NCU" --version; } > "$out/versions.txt" 2>&1
step() {  # name, cap seconds, command...
  local name=$1 cap=$2; shift 2
  local t0; t0=$(date +%s)
  timeout "$cap" "$@" > "$out/$name.txt" 2>&1
  echo "$name rc=$? $(( $(date +%s) - t0 )) s" | tee -a "$out/steps.txt"
}
metrics=$(python3 -c "from surrobench.collect.ncu import METRICS; print(','.join(METRICS))")
step planted_ncu 120 "$NCU" --nvtx --nvtx-include "planted/" --csv --print-units base --print-kernel-base demangled \
  --clock-control none --cache-control all --page raw --metrics "$metrics" --log-file "$out/planted_raw.csv" \
  python3 benchmarks/planted_kernels.py
step planted_read 30 python3 - "$out/planted_raw.csv" <<'PY'
import sys
from surrobench.analysis.counters import measure
from surrobench.collect.ncu_parse import parse_raw_csv
from surrobench.results.ceilings import load_ceilings
import torch
ceil = load_ceilings(torch.cuda.get_device_name(), None)
cases = "elementwise add transpose_copy gemm_bf16 gemm_tf32 gemm_fp32 tiny_grid".split()
for case, k in zip(cases, parse_raw_csv(open(sys.argv[1]).read())):
    m = measure(k, ceil)
    print(f"{case:15s} {m.bound:8s} {m.limiter:12s} {m.cause or '-':15s} {m.precision or '-':5s} "
          f"AI {m.arithmetic_intensity or 0:8.2f}  {m.achieved_tflops or 0:7.2f} TFLOP/s  roof {m.roof_tflops or 0:7.1f}  "
          f"DRAM {m.dram_gbps or 0:6.0f} GB/s  passes {k.passes}")
PY
diag() {  # name, cap, diagnose arguments...
  local name=$1 cap=$2; shift 2
  step "diagnose_$name" "$cap" python3 -m surrobench diagnose "$@" --device cuda --counters --iters 30 \
    --db "$out/counters.db" --trace-out "$out/traces_$name" --json "$out/diagnose_$name.json"
}
diag fno2d 50 --model fno2d --shape 256 --batch 8
diag unet2d 50 --model unet2d --shape 256 --batch 4
diag meshgraphnet 50 --model meshgraphnet --shape 65536 --batch 1
diag deeponet 40 --model deeponet --shape 16384 --batch 64
diag pinn 40 --model pinn-mlp --shape 65536 --batch 1
diag neuralop_fno 50 --model examples/neuralop_fno.py:build --shape 256 --batch 8
diag gat 50 --model examples/pyg_gat.py:build --shape 65536 --batch 1
diag transformer 60 --model examples/patch_transformer.py:build --shape 256 --batch 8
step optimize_transformer 90 python3 -m surrobench optimize --model examples/patch_transformer.py:build --shape 256 \
  --batch 8 --device cuda --budget-s 60 --db "$out/counters.db" --json "$out/optimize_transformer.json"
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
(cd "$OUT" && tar czf counters.tar.gz counters && ls -la counters.tar.gz)
