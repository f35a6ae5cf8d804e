#!/usr/bin/env bash
# Real data for the kernel classifier and the Nsight Compute parser (tests/fixtures/ncu, tests/fixtures/traces):
#   1. versions, and the metrics this ncu offers on this GPU (ncu --query-metrics);
#   2. ncu on the planted kernels (benchmarks/planted_kernels.py): raw page CSV of the surrobench metric list,
#      and NVIDIA's own details page (SpeedOfLight, Occupancy, LaunchStats) for the same kernels;
#   3. ncu on one step of a transformer operator outside the zoo (benchmarks/ncu_step.py);
#   4. `surrobench profile` traces (kernel names) of models whose kernels the zoo fixtures lack: the
#      transformer (fast path fp32, SDPA bf16), torch_geometric's GAT, a compiled U-Net, a CUDA-graph FNO.
# Every step has its own timeout and writes under $OUT/capture; the folder is packed last into one file.
# Usage (repository root, on the GPU machine): OUT=/path bash benchmarks/gpu_capture_kernels.sh
set -uo pipefail
out=${OUT:?set OUT}/capture
mkdir -p "$out"
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 COLUMNS=200
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
{
  date -u +%FT%TZ; uname -r; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
  python3 -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda)"
  "$NCU" --version
} > "$out/versions.txt" 2>&1
cat "$out/versions.txt"
timeout 60 "$NCU" --query-metrics --csv > "$out/query_metrics.csv" 2> "$out/query_metrics.log"
echo "query-metrics rc=$? lines=$(wc -l < "$out/query_metrics.csv")"
metrics=$(python3 - "$out/query_metrics.csv" <<'PY'
import csv, sys
wanted = """gpu__time_duration.sum dram__bytes_read.sum dram__bytes_write.sum
dram__throughput.avg.pct_of_peak_sustained_elapsed lts__throughput.avg.pct_of_peak_sustained_elapsed
l1tex__throughput.avg.pct_of_peak_sustained_elapsed sm__throughput.avg.pct_of_peak_sustained_elapsed
gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed sm__warps_active.avg.pct_of_peak_sustained_active
sm__maximum_warps_per_active_cycle_pct launch__grid_size launch__block_size launch__registers_per_thread
launch__shared_mem_per_block_static launch__shared_mem_per_block_dynamic launch__waves_per_multiprocessor
launch__occupancy_limit_registers launch__occupancy_limit_shared_mem launch__occupancy_limit_blocks
launch__occupancy_limit_warps launch__sm_count launch__occupancy_per_block_size
sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active
sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active
sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active
sm__inst_executed_pipe_tensor_op_hmma.sum sm__inst_executed_pipe_tensor_op_gmma.sum
sm__sass_thread_inst_executed_op_ffma_pred_on.sum sm__sass_thread_inst_executed_op_fadd_pred_on.sum
sm__sass_thread_inst_executed_op_fmul_pred_on.sum sm__sass_thread_inst_executed_op_dfma_pred_on.sum
sm__sass_thread_inst_executed_op_dadd_pred_on.sum sm__sass_thread_inst_executed_op_dmul_pred_on.sum
sm__sass_thread_inst_executed_op_hfma_pred_on.sum sm__sass_thread_inst_executed_op_hadd_pred_on.sum
sm__sass_thread_inst_executed_op_hmul_pred_on.sum sm__cycles_elapsed.avg.per_second""".split()
names = set()
try:
    for row in csv.reader(open(sys.argv[1])):
        if row:
            names.add(row[0].strip().strip('"'))
except Exception:
    pass
extra = sorted(n for n in names if "ops_path_tensor" in n or "gmma" in n)
keep = [m for m in wanted if m.split(".")[0] in names] if names else wanted
keep += [n + ".sum" for n in extra if n.startswith("sm__ops_path_tensor") and n + ".sum" not in keep]
print(",".join(keep))
PY
)
echo "$metrics" | tr , '\n' > "$out/metric_list.txt"
echo "metrics: $(wc -l < "$out/metric_list.txt")"
common=(--nvtx --csv --print-units base --print-kernel-base demangled --clock-control none --cache-control all)
t0=$(date +%s)
timeout 200 "$NCU" "${common[@]}" --nvtx-include "planted/" --page raw --metrics "$metrics" \
  --log-file "$out/planted_raw.csv" python3 benchmarks/planted_kernels.py > "$out/planted_raw.log" 2>&1
echo "planted raw rc=$? $(( $(date +%s) - t0 )) s"
t0=$(date +%s)
timeout 120 "$NCU" "${common[@]}" --nvtx-include "planted/" --page details --section SpeedOfLight \
  --section Occupancy --section LaunchStats --section ComputeWorkloadAnalysis \
  --log-file "$out/planted_details.csv" python3 benchmarks/planted_kernels.py > "$out/planted_details.log" 2>&1
echo "planted details rc=$? $(( $(date +%s) - t0 )) s"
t0=$(date +%s)
timeout 150 "$NCU" "${common[@]}" --nvtx-include "surrobench_step/" --page raw --metrics "$metrics" \
  --log-file "$out/transformer_step_raw.csv" python3 benchmarks/ncu_step.py examples/patch_transformer.py:build 256 8 \
  > "$out/transformer_step.log" 2>&1
echo "transformer step rc=$? $(( $(date +%s) - t0 )) s"
prof() {  # name, cap seconds, surrobench profile arguments...
  local name=$1 cap=$2; shift 2
  t0=$(date +%s)
  timeout "$cap" python3 -m surrobench profile "$@" --device cuda --profile-wait 1 --profile-warmup 3 --profile-active 2 \
    --db "$out/capture.db" --trace-out "$out/traces_$name" --json "$out/profile_$name.json" > "$out/profile_$name.txt" 2>&1
  echo "profile $name rc=$? $(( $(date +%s) - t0 )) s"
}
prof transformer 60 --model examples/patch_transformer.py:build --shape 256 --batch 8
prof transformer_sdpa_bf16 60 --model examples/patch_transformer.py:build_sdpa --shape 256 --batch 8 --precision bf16
prof gat 60 --model examples/pyg_gat.py:build --shape 65536 --batch 1
prof unet_compile 120 --model unet2d --shape 128 --batch 1 --mode compile
prof fno_cudagraph 60 --model fno2d --shape 128 --batch 1 --mode cudagraph
prof meshgraphnet 60 --model meshgraphnet --shape 16384 --batch 1
(cd "${OUT}" && tar czf capture.tar.gz capture && ls -la capture.tar.gz)
