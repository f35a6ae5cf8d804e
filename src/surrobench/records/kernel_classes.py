"""The kernel classes: what a GPU kernel does, read from its name, in one small closed vocabulary.

A kernel's name is the one fact every trace keeps, whatever launched it (an eager op, a fused composite, a
CUDA-graph replay, a ``torch.compile`` region), and vendors name kernels by convention: :data:`KERNEL_CLASS_TABLE`
holds every pattern with real names captured on an H200, first match wins. TorchInductor's Triton kernels are
``triton_<kind>_fused_<ops>_<n>`` (``torch/_inductor/codegen/triton.py``: ``poi`` pointwise, ``red``/``per``
reduction, ``tem`` a GEMM or convolution template; ``<ops>`` the eager ops fused, :func:`inductor_fused_ops`).
These classes sort *kernels* by the hardware work they do, not *operators* (:mod:`surrobench.records.ops`): a cuDNN
kernel that converts a layout is a ``copy`` here, whatever op launched it.
"""

from __future__ import annotations

import re
from functools import lru_cache

#: ``(class, pattern, examples)``; patterns are searched in the lower-cased kernel name, first match wins.
KERNEL_CLASS_TABLE: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("communication", r"nccl", ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",)),
    # Inductor's own prefixes first: its fused names carry op names (convolution, cat) of other classes
    ("elementwise", r"^triton_poi_", ("triton_poi_fused_clone_convolution_native_group_norm_silu_3",)),
    (
        "reduction",
        r"^triton_(?:red|per)_",
        ("triton_per_fused_clone_convolution_native_group_norm_0", "triton_red_fused_sum_1"),
    ),
    ("convolution", r"^triton_tem_.*conv", ("triton_tem_fused_convolution_0",)),
    ("gemm", r"^triton_(?:tem_|mm)", ("triton_tem_fused_addmm_0", "triton_mm")),
    # before convolution (cuDNN's SDPA kernels say fprop) and before gemm (flash kernels run MMAs)
    (
        "attention",
        r"flash|fmha|efficient_attention|mem_efficient|attention|sdpa",
        (
            "pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<...>>",
            "fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<...>::Params)",
            "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1",
        ),
    ),
    (
        "fft",
        r"fft|(?<![a-z])(?:r2c|c2r|c2c)(?![a-z])",
        ("regular_fft<128u, EPT<16u>, 32u, 4u>", "vector_fft_symm_r2c<128u, EPT<8u>>"),
    ),
    # cuDNN's layout conversions before its convolutions: they move data, they do not convolve
    (
        "copy",
        r"nchwtonhwc|nhwctonchw|converttensor",
        (
            "cudnn::engines_precompiled::nchwToNhwcKernel<float>",
            "cudnn::engines_precompiled::convertTensor_kernel<float>",
        ),
    ),
    (
        "convolution",
        r"conv(?!ert)|fprop|dgrad|wgrad|winograd|implicit_convolve|cudnn::(?!bn_)",
        (
            "sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x64x32_warpgroupsize1x1x1_g1",
            "implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, 1, false, false, true>",
            "cutlass__5x_cudnn::Kernel<cutlass_tensorop_s1688fprop_optimized_tf32_256x64_16x4_nhwc_align4>",
        ),
    ),
    (
        "gemm",
        r"gemm|gemv|cublas|cutlass|nvjet|xmma_gemm|splitkreduce|(?<![a-z])dot_kernel",
        (
            "cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x64_16x6_nn_align4>",
            "internal::gemvx::kernel<int, int, float, float, float, float, false, true, true, false, 7>",
            "cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, false>",
            "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTT",
        ),
    ),
    # gather/scatter before copy and elementwise: index kernels are elementwise_kernel specializations
    (
        "gather_scatter",
        r"(?<!with_)index|scatter|gather|embedding|upsample",
        (
            "at::native::index_elementwise_kernel<128, 4>",
            "at::native::(anonymous namespace)::indexSelectLargeIndex<float, long, unsigned int, 2, 2, -2, true>",
            "at::native::(anonymous namespace)::upsample_nearest2d_out_frame<float>",
        ),
    ),
    (
        "copy",
        r"copy|transpose|catarray|permute|memcpy|memset",
        (
            "at::native::elementwise_kernel<128, 2, gpu_kernel_impl_nocast<direct_copy_kernel_cuda>>",
            "at::native::(anonymous namespace)::CatArrayBatchedCopy_vectorized<OpaqueType<4u>, unsigned int>",
            "Memcpy DtoD (Device -> Device)",
        ),
    ),
    (
        "reduction",
        r"reduce|softmax|norm(?!al)|welford|moments|computefusedparams|pool|argm|cumsum|scan",
        (
            "at::native::reduce_kernel<512, 1, ReduceOp<float, MaxNanFunctor<float>>>",
            "at::native::(anonymous namespace)::RowwiseMomentsCUDAKernel<float>",
            "at::native::(anonymous namespace)::avg_pool2d_out_cuda_frame<float, float>",
        ),
    ),
    (
        "elementwise",
        r"elementwise|functor|multi_tensor_apply|fill|activation|transform_bias_rescale_qkv",
        (
            "at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>",
            "transform_bias_rescale_qkv_kernel<float, float, false>",
        ),
    ),
)
OTHER = "other"
KERNEL_CLASSES: tuple[str, ...] = tuple(dict.fromkeys(row[0] for row in KERNEL_CLASS_TABLE)) + (OTHER,)
#: Classes of the kernels that run on the tensor cores when the precision lets them (tf32, bf16, fp16).
MATMUL_CLASSES = ("gemm", "convolution", "attention")
_COMPILED = tuple((cls, re.compile(pattern)) for cls, pattern, _ in KERNEL_CLASS_TABLE)
_INDUCTOR = re.compile(r"^triton_(?:poi|red|per|tem)_fused_(?P<ops>.+?)_\d+$")


@lru_cache(maxsize=8192)
def classify_kernel(name: str) -> str:
    """The :data:`KERNEL_CLASS_TABLE` class of a kernel name (demangled, as torch.profiler or Nsight
    Systems write it); ``"other"`` when no pattern matches."""
    lowered = name.lower()
    for cls, pattern in _COMPILED:
        if pattern.search(lowered):
            return cls
    return OTHER


def inductor_fused_ops(name: str) -> str | None:
    """The eager ops a TorchInductor Triton kernel fuses, as its name spells them (``triton_poi_fused_add_mul_0``
    -> ``"add_mul"``; ``_``-joined, since op names hold ``_`` themselves); None for any other kernel."""
    match = _INDUCTOR.match(name)
    return match["ops"] if match else None
