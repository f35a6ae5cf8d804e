"""Planted CUDA kernels whose bound is known, each in its own NVTX range, for reading Nsight Compute's
counters against the truth (docs/benchmarks/h200-counters.md).

    ncu --nvtx --nvtx-include 'planted/' ... python3 benchmarks/planted_kernels.py

Each case runs twice before its range (warm-up: cuBLAS handles, clocks) and once inside the one-level NVTX
range ``planted``, in the order below (ncu's rows come in launch order; the case name is printed to stdout):

- ``elementwise``: ``x * 2`` over 1 GiB fp32 (memory-bound: DRAM near the copy ceiling);
- ``add``: ``x + y`` over 1 GiB fp32 each (memory-bound, two reads and a write);
- ``transpose_copy``: a (8192, 32768) fp32 transpose made contiguous (a copy kernel, memory-bound);
- ``gemm_bf16``: 8192^3 bf16 matmul (tensor pipe, warp-group MMA on Hopper);
- ``gemm_tf32``: 8192^3 fp32 matmul with TF32 allowed (tensor pipe);
- ``gemm_fp32``: 4096^3 fp32 matmul, TF32 off (FMA pipe);
- ``tiny_grid``: softmax over one row of 2^24 fp32 values (one thread block: latency/occupancy-bound).
"""

import torch

N_BYTES = 1 << 30


def _cases():
    x = torch.randn(N_BYTES // 4, device="cuda")
    y = torch.randn_like(x)
    a16, b16 = (torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    a32, b32 = (torch.randn(8192, 8192, device="cuda") for _ in range(2))
    c32, d32 = (torch.randn(4096, 4096, device="cuda") for _ in range(2))
    row = torch.randn(1, 1 << 24, device="cuda")

    def tf32():
        torch.backends.cuda.matmul.allow_tf32 = True
        out = a32 @ b32
        torch.backends.cuda.matmul.allow_tf32 = False
        return out

    return {
        "elementwise": lambda: x * 2,
        "add": lambda: x + y,
        "transpose_copy": lambda: x.view(8192, -1).t().contiguous(),
        "gemm_bf16": lambda: a16 @ b16,
        "gemm_tf32": tf32,
        "gemm_fp32": lambda: c32 @ d32,
        "tiny_grid": lambda: torch.softmax(row, dim=-1),
    }


def main() -> None:
    torch.backends.cuda.matmul.allow_tf32 = False
    for name, fn in _cases().items():
        fn(), fn()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push("planted")
        fn()
        torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
        print(name, "done", flush=True)


if __name__ == "__main__":
    main()
