#!/usr/bin/env bash
# Issue 6 on a CUDA machine: fno2d eager vs CUDA graph (same shapes and batches), an A/A comparison of
# two identical eager runs (must be "unchanged" everywhere), the Markdown tables, the HTML report and a
# headless-chromium screenshot of it (skipped when chromium is absent).
# Usage: benchmarks/gpu_compare.sh OUT_DIR   (from the repository root)
set -uo pipefail
out=${1:?usage: benchmarks/gpu_compare.sh OUT_DIR}
mkdir -p "$out"
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 COLUMNS=250
sb() { python3 -m surrobench "$@"; }
run_id() { python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['run_id'])" "$1"; }
db=$out/compare.db
# 4 rounds x 50 timed iterations = 200 samples per config (above MIN_SAMPLES_FOR_P95 = 60); rounds spread
# a slow spell of the VM host over configs and widen the CI accordingly (run --rounds).
common=(--model fno2d --shape 128,256,512 --batch 1,4 --precision fp32 --device cuda --warmup 20 --iters 50 --rounds 4 --db "$db")
{
  date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
  python3 -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
} | tee "$out/versions.txt"

sb run "${common[@]}" --mode eager --tag eager-a --json "$out/eager_a.json" | tee "$out/eager_a.txt"
sb run "${common[@]}" --mode eager --tag eager-b --json "$out/eager_b.json" | tee "$out/eager_b.txt"
sb run "${common[@]}" --mode cudagraph --tag cudagraph --json "$out/cudagraph.json" | tee "$out/cudagraph.txt"
# Run ids (not the JSON files) so that per-config settings (TF32, cudnn.benchmark, SM clock) are compared too.
a=$(run_id "$out/eager_a.json"); b=$(run_id "$out/eager_b.json"); g=$(run_id "$out/cudagraph.json")

sb compare "$a" "$g" --db "$db" --ignore-field mode --markdown "$out/compare_eager_vs_cudagraph.md" \
  --json "$out/compare_eager_vs_cudagraph.json" | tee "$out/compare_eager_vs_cudagraph.txt"
sb compare "$a" "$b" --db "$db" --markdown "$out/compare_aa.md" --json "$out/compare_aa.json" \
  --fail-on-regression | tee "$out/compare_aa.txt"
echo "A/A compare exit code: ${PIPESTATUS[0]} (0 expected)" | tee -a "$out/compare_aa.txt"
python3 - "$out/compare_aa.json" <<'PY' | tee -a "$out/compare_aa.txt"
import json, sys
configs = json.load(open(sys.argv[1]))["configs"]
moved = [(c["input_shape"], c["verdict"], c["median_ratio"]) for c in configs if c["verdict"] != "unchanged"]
print(f"A/A: {len(configs)} configs, " + ("unchanged everywhere" if not moved else f"NOT unchanged: {moved}"))
PY

sb profile --model fno2d --shape 128 --batch 1 --precision fp32 --device cuda --db "$db" --tag profile \
  --trace-out "$out/traces" > "$out/profile.txt" 2>&1
trace=$(ls "$out"/traces/*.json.gz | head -n 1)
sb report "$a" "$g" --db "$db" --ignore-field mode --trace "$trace" -o "$out/report.html"
sb report "$a" "$b" --db "$db" -o "$out/report_aa.html"

chromium_bin=$(command -v chromium || command -v chromium-browser || true)
if [ -n "$chromium_bin" ]; then
  for page in report report_aa; do
    "$chromium_bin" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
      --disable-background-networking --disable-component-update --disable-sync \
      --user-data-dir="$(mktemp -d)" --window-size=1400,5200 --screenshot="$out/$page.png" \
      "file://$(realpath "$out/$page.html")" 2>"$out/$page.chromium.log"
    echo "$page screenshot: exit $?"
  done
else
  echo "chromium not found: no screenshot (apt-get install -y chromium)"
fi
ls -la "$out"
