#!/usr/bin/env bash
# Every HTML page surrobench writes (run report, compare, diagnosis, optimize, serve), made on the CPU at tiny
# sizes with a long model name, then photographed by headless Chromium at 1,400 and 800 px wide and kept as small
# PNGs in docs/benchmarks/pages/ (benchmarks/page_shots.py) (docs/benchmarks/pages.md lists them with these commands).
# Usage: benchmarks/pages.sh [WORK_DIR]   (from the repository root; needs chromium and Pillow, optionally
# pngquant; about 10 minutes on two shared CPU cores, most of it the profiled run)
set -euo pipefail
work=${1:-/tmp/surrobench-pages}
shots=docs/benchmarks/pages
rm -rf "$work" && mkdir -p "$work" "$shots"
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH} OMP_NUM_THREADS=1
sb() { "${PYTHON:-python3}" -m surrobench "$@"; }
# the run a --json names: a run's run_id, a diagnosis's context.run_id, an optimization's baseline run
id() { "${PYTHON:-python3}" -c "import json, sys; d = json.load(open(sys.argv[1]))
print(d.get('run_id') or d.get('context', {}).get('run_id') or d['baseline_run_id'])" "$1"; }
M=examples/layout_long_name.py:build_a_very_long_surrogate_model_name_for_layout_tests
db=$work/pages.db
few=(--device cpu --warmup 2 --iters 20 --input-sets 1 --db "$db")

sb run --model "$M,fno2d" --shape 16,32 --batch 1,2 "${few[@]}" --profile torch --tag base --json "$work/base.json"
sb run --model "$M,fno2d" --shape 16,32 --batch 1,2 "${few[@]}" --tag new --json "$work/new.json"
sb report "$(id "$work/base.json")" --db "$db" -o "$work/run.html"
sb report "$(id "$work/base.json")" "$(id "$work/new.json")" --db "$db" -o "$work/compare.html"
sb diagnose --model "$M" --shape 16 --batch 1,4 "${few[@]}" --json "$work/diagnosis.json" || true
sb report "$(id "$work/diagnosis.json")" --db "$db" -o "$work/diagnosis.html"
sb optimize --model "$M" --shape 16 --batch 1 --device cpu --db "$db" --budget-s 30 --json "$work/optimize.json"
# the pair optimize prints for its HTML; the baseline alone when nothing won on a busy host (no recipe run)
recipe=$("${PYTHON:-python3}" -c "import json, sys; print(json.load(open(sys.argv[1]))['recipe_run_id'] or '')" "$work/optimize.json")
sb report "$(id "$work/optimize.json")" ${recipe:+"$recipe"} --ignore-field precision,mode --db "$db" -o "$work/optimize.html"
sb serve --model "$M" --shape 16 --device cpu --rate 50,100,200 --max-batch 1,4 --duration-s 1 --warmup-s 0.2 \
  --min-requests 0 --p99-ms 50 --db "$db" --json "$work/serve.json" --html "$work/serve.html"

"${PYTHON:-python3}" benchmarks/page_shots.py "$work" "$shots" run compare diagnosis optimize serve
