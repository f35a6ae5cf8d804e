#!/usr/bin/env bash
# surrobench versus on the H200, for docs/benchmarks/h200-versus.md: 2-D Navier-Stokes (examples/navier_stokes.py)
# at 64² and 256². Trains the FNO at 64² (examples/train_ns_fno.py, ~140 s with its data), then compares it with the
# solver's ladder: at 64² (fp32/tf32 x eager/cudagraph), at 256² with the same 64² weights (the FNO's resolution
# invariance: no training at 256²), and a 4-step rollout at 64² (the crossover along the horizon). Every step has
# its own timeout; the whole stays under 540 s. The work folder is packed into $OUT/versus.tar.gz after every step
# (JSON, HTML, Pareto PNG, logs); the weights are copied to $OUT/ns_fno_64.pt.
# Usage: OUT=/some/dir benchmarks/gpu_versus.sh   (from the repository root)
#   DRY=1: CPU, 16² and 32², seconds of training (checks the script's logic, not the numbers)
# Then: python3 benchmarks/versus_summary.py $OUT/versus > docs/benchmarks/h200-versus.md
set -uo pipefail
: "${OUT:?set OUT}"
out=/tmp/versus
rm -rf "$out" && mkdir -p "$out"
pack() { tar -czf "${OUT}/versus.tar.gz" --exclude '*.pt' -C /tmp versus; }
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
DRY=${DRY:-0}
if [ "$DRY" = 1 ]; then
  dev=cpu; small=16; large=32; train_s=40; cases=4; batch=2; modes=eager; precisions=fp32; lim=(80 120 90 90)
  train_args=(--cases 32 --frames 2 --lr 3e-3)
else
  dev=cuda; small=64; large=256; train_s=140; cases=16; batch=8; modes=eager,cudagraph; precisions=fp32,tf32
  lim=(170 110 140 90)
  train_args=(--cases 512 --frames 4)
fi
weights=$out/ns_fno_$small.pt
{
  date -u +%FT%TZ
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv 2>/dev/null || echo "no nvidia-smi"
  python3 -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda)"
} | tee "$out/versions.txt"

echo "== train $small"
timeout -k 10 "${lim[0]}" python3 examples/train_ns_fno.py --size "$small" --budget-s "$train_s" --device "$dev" \
  "${train_args[@]}" --out "$weights" >"$out/train.txt" 2>&1
echo "rc=$?" >>"$out/train.txt"; tail -3 "$out/train.txt"; cp "$weights" "$OUT/" 2>/dev/null; pack

# one versus run: name, time limit, then versus's own arguments; the Pareto plot is drawn from the JSON
versus() {
  local name=$1 limit=$2; shift 2; echo "== $name"
  timeout -s INT -k 10 "$limit" python3 -m surrobench versus --problem examples/navier_stokes.py:problem \
    --problem-arg "weights=$weights" --device "$dev" --cases "$cases" --batch "$batch" "$@" \
    --json "$out/$name.json" --html "$out/$name.html" --markdown "$out/$name.md" >"$out/$name.txt" 2>&1
  echo "rc=$?" >>"$out/$name.txt"; tail -8 "$out/$name.txt"
  [ -f "$out/$name.json" ] && python3 -c "import sys; from surrobench.records.versus import load_versus
from surrobench.report.html import FIGURE_DPI; from surrobench.report.plots import plain_text
from surrobench.report.versus import pareto_figure
fig = pareto_figure(load_versus(sys.argv[1]))
with plain_text(): fig is None or fig.savefig(sys.argv[2], format='png', dpi=FIGURE_DPI)" \
    "$out/$name.json" "$out/$name.png" 2>"$out/$name-png.txt"
  pack
}
versus "ns$small" "${lim[1]}" --problem-arg "size=$small" --precision "$precisions" --mode "$modes"
versus "ns$large" "${lim[2]}" --problem-arg "size=$large" --precision "$precisions" --mode "$modes"
versus "ns$small-rollout" "${lim[3]}" --problem-arg "size=$small" --problem-arg steps=4 \
  --precision "${precisions##*,}" --mode "${modes##*,}" --cases $((cases / 2))
date -u +%FT%TZ | tee -a "$out/versions.txt"
pack && ls -la "$OUT"
