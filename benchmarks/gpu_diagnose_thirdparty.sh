#!/usr/bin/env bash
# Diagnoses of models surrobench did not write, checked against measurements, for the third-party section of
# docs/benchmarks/h200-diagnosis.md: neuraloperator FNO and TFNO at 512x512 batch 8, torch_geometric GAT
# on a 65536-node graph (8 edges per node). For each: `surrobench diagnose` (the verdicts), then `surrobench run
# --precision fp32,bf16,fp16,tf32` in eager and cudagraph mode, then in compile mode (a second run, so a slow
# compile cannot cost the other measurements): what each remedy measures, failures with their explained
# cause. Last a summary table (benchmarks/thirdparty_summary.py).
# Also times unet2d 512 b1 in NCHW and channels_last (the GroupNorm advice of analysis/op_families.py).
#
# Usage (repository root): OUT=/path/to/out bash benchmarks/gpu_diagnose_thirdparty.sh
#   DEVICE=cpu OUT=/tmp/x bash benchmarks/gpu_diagnose_thirdparty.sh   (a tiny CPU trial of the same steps)
# Needs neuraloperator (+ tensorly, tensorly-torch) and torch_geometric importable (PYTHONPATH=/tmp/site:src).
# Wall time on the H200: about 5 minutes, at most 8.5 (each command is capped by `timeout`; a capped run keeps
# the configs it finished: they are committed to the database one by one, and the summary reads the database).
# $OUT ends with 6 files: versions.txt, log.txt (every command's output, the run tables included),
# diagnose.md (the judgment tables), layout.txt (GroupNorm NCHW vs channels_last), summary.md (printed last)
# and thirdparty.tar.gz (diagnosis JSONs with per-operator rooflines, run JSONs, the database, the traces).
set -uo pipefail
out=${OUT:?set OUT to the output folder}
device=${DEVICE:-cuda}
mkdir -p "$out"
work=$(mktemp -d)
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 COLUMNS=250
db=$work/thirdparty.db

if [ "$device" = cuda ]; then
  fno_shape=512 fno_batch=8 gnn_shape=65536 modes=eager,cudagraph precisions=fp32,bf16,fp16,tf32
  warmup=10 iters=50 diag_cap=60 cap=40 compile_cap=50
else  # a trial of the steps on a CPU: tiny sizes, eager only, no calibration
  fno_shape=32 fno_batch=1 gnn_shape=512 modes=eager precisions=fp32,bf16 warmup=2 iters=17 diag_cap=240 cap=240 compile_cap=0
fi
# name | --model spec | shape | batch
models=(
  "fno|examples/neuralop_fno.py:build_fno|$fno_shape|$fno_batch"
  "tfno|examples/neuralop_fno.py:build_tfno|$fno_shape|$fno_batch"
  "gat|examples/pyg_gat.py:build|$gnn_shape|1"
)

{
  date -u +%FT%TZ
  [ "$device" = cuda ] && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
  python3 -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda)"
  python3 -c "import neuralop, tensorly, torch_geometric as g; print('neuraloperator', neuralop.__version__, 'tensorly', tensorly.__version__, 'torch_geometric', g.__version__)"
} > "$out/versions.txt" 2>&1

{
  if [ "$device" = cuda ]; then
    echo "== calibrate"; timeout 60 python3 -m surrobench calibrate --device cuda --db "$db"; echo "exit code: $?"
  fi
  for m in "${models[@]}"; do
    IFS='|' read -r name spec shape batch <<< "$m"
    echo "== diagnose $name ($spec) shape $shape batch $batch fp32 eager"
    timeout "$diag_cap" python3 -m surrobench diagnose --model "$spec" --shape "$shape" --batch "$batch" --precision fp32 \
      --device "$device" --warmup "$warmup" --iters "$iters" --db "$db" --tag "diagnose:$name" \
      --trace-out "$work/traces" --json "$work/diagnose_$name.json" --markdown "$work/diagnose_$name.md"
    echo "exit code: $?"
    echo "== run $name: modes $modes x precisions $precisions"
    timeout "$cap" python3 -m surrobench run --model "$spec" --shape "$shape" --batch "$batch" --mode "$modes" \
      --precision "$precisions" --device "$device" --warmup "$warmup" --iters "$iters" --db "$db" \
      --tag "run:$name" --json "$work/run_$name.json"
    echo "exit code: $? (124: capped by timeout; the finished configs are in the database)"
    [ "$compile_cap" -gt 0 ] || continue
    echo "== run $name: mode compile x precisions $precisions"
    timeout "$compile_cap" python3 -m surrobench run --model "$spec" --shape "$shape" --batch "$batch" --mode compile \
      --precision "$precisions" --device "$device" --warmup "$warmup" --iters "$iters" --db "$db" \
      --tag "compile:$name" --json "$work/run_${name}_compile.json"
    echo "exit code: $? (124: capped by timeout; the finished configs are in the database)"
  done
} > "$out/log.txt" 2>&1

python3 - "$device" > "$out/layout.txt" 2>&1 <<'EOF'
# unet2d 512 b1 fp32 eager in NCHW and in channels_last, interleaved rounds, CUDA-event medians (GroupNorm advice)
import statistics, sys, time
import torch
from surrobench.workload.zoo import get_surrogate
device = sys.argv[1]
size, calls = (512, 10) if device == "cuda" else (32, 2)
model = get_surrogate("unet2d").build().to(device).eval()
x = torch.randn(1, 3, size, size, device=device)
layouts = {"NCHW": (model, x)}
cl = get_surrogate("unet2d").build().to(device).eval().to(memory_format=torch.channels_last)
cl.load_state_dict(model.state_dict())
layouts["channels_last"] = (cl, x.to(memory_format=torch.channels_last))
times = {k: [] for k in layouts}
with torch.inference_mode():
    for _ in range(5):  # rounds, interleaved
        for name, (m, inp) in layouts.items():
            for _ in range(3):
                m(inp)
            for _ in range(calls):
                if device == "cuda":
                    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    a.record(); m(inp); b.record(); torch.cuda.synchronize(); times[name].append(a.elapsed_time(b))
                else:
                    t = time.perf_counter(); m(inp); times[name].append((time.perf_counter() - t) * 1e3)
med = {k: statistics.median(v) for k, v in times.items()}
print(f"unet2d {size}x{size} b1 fp32 eager on {device}, {5 * calls} calls each in 5 interleaved rounds, median ms")
for k, v in med.items():
    q = statistics.quantiles(times[k], n=4)
    print(f"{k:14s} {v:8.3f} ms  (IQR {q[0]:.3f}-{q[2]:.3f})")
print(f"channels_last / NCHW = {med['channels_last'] / med['NCHW']:.2f}x")
EOF

cat "$work"/diagnose_*.md > "$out/diagnose.md" 2>/dev/null
python3 benchmarks/thirdparty_summary.py "$db" "$work" > "$out/summary.md" 2>&1
tar -czf "$out/thirdparty.tar.gz" -C "$work" . && rm -rf "$work"
cat "$out/layout.txt" "$out/summary.md"
