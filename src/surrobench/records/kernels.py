"""The kernel table record: which GPU kernels ran, what each does, and which op and ``nn.Module`` launched it.

One row per (kernel name, op, module, origin) of one profiled config, summed over the active steps
(:class:`KernelStat`). :class:`KernelRows` attributes kernels for both builders (torch.profiler's events, a
loaded trace) by the rules of docs/profile.md, "Kernel attribution": the innermost op around the launch call, a
view's kernels passed to the nearest enclosing op that is not one (:data:`~surrobench.records.ops.VIEWS`),
:data:`ORIGINS` for the rest; each :class:`AttributionNote` is one structured fact of :data:`NOTE_KINDS`.

**Kernel classes**: what a GPU kernel does, read from its name (the one fact every trace keeps), in one small closed
vocabulary, :data:`KERNEL_CLASS_TABLE` (first match wins; TorchInductor's names, ``torch/_inductor/codegen/triton.py``:
:func:`inductor_fused_ops`). These classes sort *kernels* by the hardware work they do, not *operators*
(:mod:`surrobench.records.ops`): a cuDNN kernel that converts a layout is a ``copy`` here, whatever op launched it.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from surrobench.records import schemas
from surrobench.records.ops import OTHER, VIEWS, categorize
from surrobench.records.run import grouped

#: How a row's ``op`` was found.
ORIGINS: dict[str, str] = {
    "launch": "the op around the kernel's launch call",
    "recredited": "a metadata op launched it: credited to the nearest enclosing op that is not one",
    "graph_replay": "replayed from a CUDA graph: no op launched it, the op is lost (the name and class hold)",
    "compiled": "launched by a torch.compile region, not by an eager op: the op is lost, ``fused_ops`` may say it",
    "no_op": "launched outside any op (no op around the launch call): the op is lost",
    "matched_eager": "its op was lost (graph replay, compiled, no op): credited by name to the eager step's op",
}
#: The facts :class:`AttributionNote` records.
NOTE_KINDS: dict[str, str] = {
    "metadata_op_recredited": "a metadata op was credited kernels; they went to the enclosing op (``into``)",
    "metadata_op_no_parent": "a metadata op was credited kernels and has no enclosing op: the op is lost",
    "graph_replay_unmapped": "kernels replayed from CUDA graphs: classified by name, no op or module",
    "compiled_unmapped": "kernels a torch.compile region launched itself: classified by name, no eager op",
    "no_op_unmapped": "kernels launched outside any op: classified by name, no op or module",
    "compiled_by_name": "TorchInductor kernels: their eager ops known only from the kernel names (``fused_ops``)",
    "module_path_lost": "no nn.Module paths: ``into`` says why (a trace without module ranges, compiled code)",
}
#: The range name prefix of the forward hooks that record module paths (``surrobench::module::encoder.0``).
MODULE_RANGE_PREFIX = "surrobench::module::"
_MODULE_RANGE = re.compile(rf"^{re.escape(MODULE_RANGE_PREFIX)}(?P<path>.*)$")
#: TorchInductor's range around its own launch of a Triton kernel, named after the kernel (no ATen op is).
_INDUCTOR_LAUNCH = re.compile(r"^triton_")


def module_path(range_name: str) -> str | None:
    """The module path of a module range (``surrobench::module::encoder.layers.0`` -> ``encoder.layers.0``;
    the root module is ``""``), None for any other range name."""
    match = _MODULE_RANGE.match(range_name)
    return match["path"] if match else None


@dataclass(frozen=True)
class KernelStat(schemas.Plain):
    """Kernels of one name launched by one op in one module, over the active steps: ``kernel_class`` of
    :func:`~surrobench.records.kernels.classify_kernel`; ``device_us`` µs, ``share`` of the table's
    ``total_us`` (the op table's device basis); ``op`` None where the mapping is lost (``origin``); ``module`` the
    dotted ``nn.Module`` path; ``fused_ops`` the eager ops a TorchInductor kernel's name says it fuses."""

    name: str
    kernel_class: str
    calls: int
    device_us: float
    share: float
    op: str | None
    module: str | None
    origin: str = "launch"
    fused_ops: str | None = None

    def __post_init__(self) -> None:
        if self.kernel_class not in KERNEL_CLASSES or self.origin not in ORIGINS:
            raise ValueError(f"kernel class {self.kernel_class!r} / origin {self.origin!r} not in the vocabulary")


@dataclass(frozen=True)
class AttributionNote(schemas.Plain):
    """One fact about the attribution: ``kind`` of :data:`NOTE_KINDS`, the ``op`` it is about (None for all),
    ``into`` the op the kernels went to (or the reason a mapping is lost), and the kernels and µs concerned."""

    kind: str
    op: str | None
    into: str | None
    kernels: int
    device_us: float

    def __post_init__(self) -> None:
        if self.kind not in NOTE_KINDS:
            raise ValueError(f"unknown attribution note {self.kind!r}; one of {tuple(NOTE_KINDS)}")


@dataclass(frozen=True)
class KernelTable(schemas.Plain):
    """The kernels of one profiled config: rows by decreasing ``device_us``, their device time over
    ``active_steps`` (``total_us``, µs, what shares are of), ``source`` ``"profiler"`` or ``"trace"``, and the
    notes of their attribution."""

    DERIVED = ("class_shares", "op_classes")

    kernels: tuple[KernelStat, ...]
    total_us: float
    active_steps: int
    source: str
    notes: tuple[AttributionNote, ...] = ()

    def class_shares(self) -> dict[str, float]:
        """``{kernel class: share of total_us}``, largest first."""
        return _shares((k.kernel_class, k.device_us) for k in self.kernels)

    def op_classes(self) -> dict[str, dict[str, float]]:
        """Per op: ``{op: {kernel class: share of that op's kernel time}}`` (rows with an op only)."""
        by_op = grouped((k for k in self.kernels if k.op is not None), lambda k: k.op)
        return {op: _shares((k.kernel_class, k.device_us) for k in rows) for op, rows in by_op.items()}


def _shares(rows) -> dict[str, float]:
    sums: Counter = Counter()
    for key, us in rows:
        sums[key] += us
    total = sum(sums.values())
    return {k: (us / total if total > 0 else 0.0) for k, us in sorted(sums.items(), key=lambda kv: -kv[1])}


class KernelRows:
    """Per-row sums from which a :class:`KernelTable` is built; the builders call :meth:`add` once per kernel
    with the chain of ops around its launch, innermost first, and the module path around them."""

    def __init__(self) -> None:
        self._us: Counter = Counter()
        self._calls: Counter = Counter()
        self._notes: Counter = Counter()
        self._note_us: Counter = Counter()
        self._lost_modules: str | None = None

    def add(
        self, name: str, device_us: float, ops: list[str], module: str | None, *, lost: str = "no_op", calls: int = 1
    ) -> str | None:
        """``calls`` kernels of ``device_us`` in all, launched inside ``ops`` (op names, innermost first; empty when
        no op launched them, ``lost`` then says why: ``"graph_replay"``, ``"compiled"`` or ``"no_op"``; Inductor's
        launch ranges in ``ops`` are skipped, and ``ops`` of nothing else means ``"compiled"``).
        Returns the op they are credited to (None: lost)."""
        eager = [op for op in ops if not _INDUCTOR_LAUNCH.match(op)]
        op, origin = self._owner(eager, "compiled" if ops and not eager else lost)
        if origin == "recredited":
            self._note("metadata_op_recredited", eager[0], op, device_us, calls)
        elif op is None and eager:
            self._note("metadata_op_no_parent", eager[0], None, device_us, calls)
        elif op is None:
            self._note(f"{origin}_unmapped", None, None, device_us, calls)
        fused = inductor_fused_ops(name)
        if fused is not None:
            self._note("compiled_by_name", None, None, device_us, calls)
        key = (name, op, module, origin, fused)
        self._us[key] += device_us
        self._calls[key] += calls
        return op

    def lost_modules(self, reason: str) -> None:
        """Record that no row has a module path, and why (``reason``: a short phrase, e.g. the mode)."""
        self._lost_modules = reason

    @staticmethod
    def _owner(ops: list[str], lost: str) -> tuple[str | None, str]:
        if not ops:
            if lost not in ORIGINS or lost in ("launch", "recredited"):
                raise ValueError(f"lost {lost!r}: one of graph_replay, compiled, no_op")
            return None, lost
        for op in ops:
            if categorize(op) != VIEWS:
                return op, "launch" if op == ops[0] else "recredited"
        return None, "no_op"

    def _note(self, kind: str, op: str | None, into: str | None, us: float, calls: int) -> None:
        self._notes[(kind, op, into)] += calls
        self._note_us[(kind, op, into)] += us

    def finish(self, *, active_steps: int, source: str) -> KernelTable:
        total = float(sum(self._us.values()))
        rows = [
            KernelStat(
                name=name,
                kernel_class=classify_kernel(name),
                calls=self._calls[key],
                device_us=float(us),
                share=float(us / total) if total > 0 else 0.0,
                op=op,
                module=module,
                origin=origin,
                fused_ops=fused,
            )
            for key, us in self._us.items()
            for name, op, module, origin, fused in [key]
        ]
        rows.sort(key=lambda k: (-k.device_us, k.name, k.op or "", k.module or ""))
        notes = tuple(
            AttributionNote(kind, op, into, self._notes[key], float(self._note_us[key]))
            for key in sorted(self._notes, key=lambda k: -self._note_us[k])
            for kind, op, into in [key]
        )
        if self._lost_modules is not None:
            notes += (AttributionNote("module_path_lost", None, self._lost_modules, len(rows), total),)
        return KernelTable(tuple(rows), total, active_steps, source, notes)


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
    # interpolation reads fixed neighbours, no index the user gives (as the op categories, records/ops.py)
    ("elementwise", r"upsample", ("at::native::(anonymous namespace)::upsample_nearest2d_out_frame<float>",)),
    # gather/scatter before copy and elementwise: index kernels are elementwise_kernel specializations
    (
        "gather_scatter",
        r"(?<!with_)index|scatter|gather|embedding|grid_sampl",
        (
            "at::native::index_elementwise_kernel<128, 4>",
            "at::native::(anonymous namespace)::indexSelectLargeIndex<float, long, unsigned int, 2, 2, -2, true>",
            "at::native::(anonymous namespace)::grid_sampler_2d_kernel<float, int>",
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
    return next((cls for cls, pattern in _COMPILED if pattern.search(lowered)), OTHER)


def inductor_fused_ops(name: str) -> str | None:
    """The eager ops a TorchInductor Triton kernel fuses, as its name spells them (``triton_poi_fused_add_mul_0``
    -> ``"add_mul"``; ``_``-joined, since op names hold ``_`` themselves); None for any other kernel."""
    match = _INDUCTOR.match(name)
    return match["ops"] if match else None
