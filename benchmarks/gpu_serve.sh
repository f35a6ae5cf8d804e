#!/usr/bin/env bash
# Issue 24 on the H200, for docs/benchmarks/h200-serve.md: fno2d and unet2d at 128 (batch-1 requests);
# the capacity at P99 <= 5 ms, eager and with each one's optimize recipe (cudagraph+tf32 for both, from
# docs/benchmarks/h200-optimize.md), and compare of the two; the batching policy's effect (max batch x max
# wait); a rate sweep for the latency-throughput curve; the HTTP mode against examples/serve_http.py. Every
# step has its own timeout and the whole stays under 9 minutes; the work folder is packed into
# $OUT/serve.tar.gz after every step, so a call cut short keeps what finished.
# Usage: OUT=/some/dir benchmarks/gpu_serve.sh   (from the repository root)
#   QUICK=1: 2 s per rate, the eager/recipe/compare pairs and the policy sweep alone (under 5 minutes)
set -uo pipefail
: "${OUT:?set OUT}"
out=/tmp/serve
rm -rf "$out" && mkdir -p "$out"
pack() { tar -czf "${OUT}/serve.tar.gz" --exclude '*.db' -C /tmp serve; }
export PYTHONPATH=/tmp/site:$PWD/src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
db=$out/h200-serve.db
step() { local name=$1 limit=$2; shift 2; echo "== $name"; timeout -s INT -k 10 "$limit" python3 -m surrobench "$@" --db "$db" \
  --json "$out/$name.json" --html "$out/$name.html" >"$out/$name.txt" 2>&1; echo "rc=$?" >>"$out/$name.txt"; tail -25 "$out/$name.txt"; pack; }
{
  date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
  python3 -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda)"
} | tee "$out/versions.txt"
QUICK=${QUICK:-0}
dur=3; cap=75; [ "$QUICK" = 1 ] && { dur=2; cap=55; }
common=(--shape 128 --device cuda --duration-s $dur --warmup-s 0.5 --p99-ms 5 --find-max)
for model in fno2d unet2d; do
  step "$model-eager" $cap serve --model $model "${common[@]}" --max-batch 8 --max-wait-ms 1 --tag "$model eager"
  step "$model-recipe" $cap serve --model $model "${common[@]}" --max-batch 8 --max-wait-ms 1 --mode cudagraph \
    --precision tf32 --tag "$model cudagraph+tf32"
  # the recipe's effect on capacity, as docs/serve.md shows it: compare of the two serve runs
  ids=$(python3 -c "import json, sys; print(*(json.load(open(f))['run_id'] for f in sys.argv[1:]))" \
    "$out/$model-eager.json" "$out/$model-recipe.json")
  echo "== $model-compare"
  # shellcheck disable=SC2086  # two run ids
  timeout -k 2 8 python3 -m surrobench compare $ids --db "$db" --json "$out/$model-compare.json" \
    >"$out/$model-compare.txt" 2>&1; echo "rc=$?" >>"$out/$model-compare.txt"; cat "$out/$model-compare.txt"
done
# the batching policy: 1 (no batching) or 8 requests, waiting 0.5 or 2 ms (recipe settings)
step fno2d-policies 110 serve --model fno2d --shape 128 --device cuda --duration-s $((dur < 2 ? dur : 2)) --warmup-s 0.5 --p99-ms 5 \
  --find-max --max-batch 1,8 --max-wait-ms 0.5,2 --mode cudagraph --precision tf32 --tag "fno2d policies"
[ "$QUICK" = 1 ] && { cp "$db" "$out/h200-serve.sqlite"; tar -czf "${OUT}/serve.tar.gz" -C /tmp serve; exit 0; }
step unet2d-curve 45 serve --model unet2d --shape 128 --device cuda --duration-s 3 --warmup-s 0.5 --p99-ms 5 \
  --rate 250,500,1000,2000,4000 --max-batch 8 --max-wait-ms 1 --mode cudagraph --precision tf32 --tag "unet2d curve"
step fno2d-closed 25 serve --model fno2d --shape 128 --device cuda --duration-s 4 --warmup-s 0.5 --concurrency 1,4,16 \
  --max-batch 16 --max-wait-ms 1 --tag "fno2d closed loop"
if python3 -c "import httpx" 2>/dev/null; then
  timeout 60 python3 examples/serve_http.py --model fno2d --shape 128 --port 8765 >"$out/server.txt" 2>&1 &
  server=$!
  sleep 8
  step fno2d-http 30 serve --url http://127.0.0.1:8765/ --rate 50,100,200 --duration-s 4 --warmup-s 0.5 --p99-ms 20
  kill "$server" 2>/dev/null
else
  echo "httpx missing: HTTP step skipped" | tee "$out/fno2d-http.txt"
fi
cp "$db" "$out/h200-serve.sqlite" 2>/dev/null
tar -czf "${OUT}/serve.tar.gz" -C /tmp serve && ls -la "${OUT}/serve.tar.gz"
