#!/usr/bin/env bash
# Issue 5 on a CUDA machine: calibrate the ceilings, run the planted-bottleneck scenario suite, diagnose
# fno2d 128 b1 and unet2d 512 b1, for docs/benchmarks/h200-diagnosis.md.
# Usage: benchmarks/gpu_diagnose.sh OUT_DIR   (from the repository root)
# OUT_DIR ends with at most 6 files: versions.txt, calibrate.txt, scenarios.md, diagnose.md, log.txt and
# diagnosis.tar.gz (the JSON documents, the database and the scenario traces).
set -uo pipefail
out=${1:?usage: benchmarks/gpu_diagnose.sh OUT_DIR}
mkdir -p "$out"
work=$(mktemp -d)
# the calibrated ceilings live per machine in the cache folder; this run keeps its own
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 COLUMNS=250 SURROBENCH_CACHE_DIR=$work/cache
sb() { python3 -m surrobench "$@"; }
db=$work/diagnose.db
{
  date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
  python3 -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
} > "$out/versions.txt" 2>&1

{
  echo "== calibrate"; sb calibrate --device cuda --json "$work/ceilings.json"
  echo "calibrate exit code: $?"
} > "$out/calibrate.txt" 2>&1

{
  echo "== scenarios (all)"
  sb scenarios --device cuda --db "$db" --trace-out "$work/traces" --json "$work/scenarios.json" \
    --markdown "$out/scenarios.md"
  echo "scenarios exit code: $? (0: every planted bottleneck is its scenario's top finding, no alarm on controls)"
  for spec in "fno2d 128" "unet2d 512"; do
    set -- $spec
    echo "== diagnose $1 $2 b1 fp32"
    sb diagnose --model "$1" --shape "$2" --batch 1 --precision fp32 --device cuda --db "$db" \
      --trace-out "$work/traces" --json "$work/diagnose_$1_$2.json" --markdown "$work/diagnose_$1_$2.md"
    echo "diagnose exit code: $?"
  done
  echo "== diagnose the stored fno2d run again from the database (--run)"
  run=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['context']['run_id'])" "$work/diagnose_fno2d_128.json")
  sb diagnose --run "$run" --db "$db" --json "$work/diagnose_run_fno2d.json"
} > "$out/log.txt" 2>&1

cat "$work"/diagnose_*.md > "$out/diagnose.md" 2>/dev/null
tar -czf "$out/diagnosis.tar.gz" -C "$work" . && rm -rf "$work"
ls -la "$out"
