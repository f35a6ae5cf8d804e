"""The op table record: which operators cost the time, one row per operator name summed over the profiled steps:

- ``self_device_us``: device time of the kernels, copies and memsets the op launched itself (the innermost op
  around the launch call), so self times never double count; ``total_device_us`` adds the nested ops' (for
  reading, not for shares).
- ``share``: self time over ``total_us``: on a GPU, of *kernel time* (user annotations such as ``ProfilerStep#N``
  and Dynamo's range around a compiled frame, :data:`COMPILED_REGION`, excluded; device work no op launched gets
  a row named after the kernel, so shares sum to 1); on a CPU, of the ops' self CPU time.
- memory columns: bytes allocated minus freed inside the op (with / without nested ops), as ``profile_memory``
  records them.

A row's category is of :data:`CATEGORY_TABLE`. Two builders fill :class:`OpTable` through :class:`OpRows`:
:func:`surrobench.collect.op_events.tables_from_events` (torch.profiler's events, shapes and memory included) and
:func:`surrobench.analysis.ops.op_table_from_timeline` (a loaded trace).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import lru_cache

from surrobench.records import schemas


#: The range Dynamo opens around each call of a ``torch.compile``'d frame, ``Torch-Compiled Region: 0/2``
#: (frame id / compile id; ``torch/_dynamo/eval_frame.py`` records it with ``_RecordFunctionFast``, so the
#: profiler shows it as an op, not as a user annotation). It wraps a frame, it runs no operator: counted as
#: one, it would be charged every kernel a CUDA-graph replay of the frame launches
#: (``torch.compile(mode="reduce-overhead")``), and be the top op at 100%.
COMPILED_REGION = re.compile(r"^Torch-Compiled Region\b")
VIEWS = "view/metadata"  # the category of the ops that only re-describe a tensor (the last row of CATEGORY_TABLE)


def _word(alternatives: str) -> str:
    """Regex for whole words of an op name, where ``_`` and ``::`` also separate words (``aten::add_``)."""
    return rf"(?<![a-z0-9])(?:{alternatives})(?![a-z0-9])"


#: The category table: ``(category, pattern, examples)``, first match wins, patterns are searched in the
#: lower-cased name of an op (``aten::native_group_norm``) or of a kernel that no op launched
#: (``regular_fft<...>``). The order settles overlaps: ``CatArrayBatchedCopy`` is concat before copy,
#: ``sm80_xmma_fprop_implicit_gemm`` is a convolution before GEMM, ``addmm`` is GEMM before ``add``; fused
#: attention (SDPA's kernels, the transformer fast path's composites) comes before them all. Pooling counts as a
#: (windowed) reduction; interpolation (``upsample_*``, nearest to trilinear) as elementwise, before the gathers (a
#: nearest kernel's name holds ``compute_source_index``): a fixed weighted read of neighbours, no index the user
#: gives; ``grid_sample``, reading at the user's grid, as a gather; a view by its exact name; ``matrix_exp`` and
#: ``matrix_power``, products of matmuls (PyTorch ``torch.linalg.matrix_exp``), as GEMM, not elementwise ``exp``.
CATEGORY_TABLE: tuple[tuple[str, str, str], ...] = (
    (
        "communication",
        r"nccl|c10d|gloo|record_param_comms|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all"
        r"|broadcast",
        "ncclDevKernel_AllReduce_Sum_f32, c10d::allreduce_, record_param_comms",
    ),
    ("memcpy/memset", r"^(?:memcpy|memset)|cudamem(?:cpy|set)", "Memcpy HtoD (Pageable -> Device), Memset (Device)"),
    (
        "attention",
        r"attention|_transformer_encoder_layer|multi_head|flash|fmha|sdpa",
        "aten::_efficient_attention_forward, aten::_transformer_encoder_layer_fwd, fmha_cutlassF_f32_aligned_64x64",
    ),
    ("fft", r"fft|(?<![a-z])(?:r2c|c2r|c2c)(?![a-z])", "aten::_fft_r2c, regular_fft<...>, vector_fft_symm_c2r"),
    (
        "convolution",
        r"conv(?!ert)|fprop|dgrad|wgrad|winograd",
        "aten::cudnn_convolution, implicit_convolve_sgemm, sm80_xmma_fprop_implicit_gemm",
    ),
    (
        "normalization",
        r"(?:group|layer|batch|instance|rms)_?norm|rowwisemoments|computefusedparams|welford",
        "aten::native_group_norm, RowwiseMomentsCUDAKernel, vectorized_layer_norm_kernel",
    ),
    ("distance/selection", r"[cp]dist|euclidean_dist|topk|sort|kthvalue|median|bucketize", "aten::cdist, aten::topk"),
    (
        "gemm/matmul/einsum",
        _word("addmm|addmv|addbmm|baddbmm|bmm|mm|mv|matmul|linear|einsum|dot|vdot|tensordot|matrix_exp|matrix_power")
        + "|gemm|gemv|cublas",
        "aten::bmm, aten::addmm, aten::einsum, aten::linalg_matrix_exp, cutlass_80_tensorop_s1688gemm, gemvx::kernel",
    ),
    ("elementwise/activation", r"upsample", "aten::upsample_trilinear3d, upsample_nearest2d_out_frame"),
    (
        "concat/index/gather/scatter",
        _word("cat|concat|stack|hstack|vstack|take|put|embedding|nonzero|masked_select|masked_scatter")
        + r"|index|gather|scatter|catarray|grid_sampl",
        "aten::cat, aten::index_select, aten::scatter_add_, CatArrayBatchedCopy, aten::grid_sampler_2d",
    ),
    (
        "copy/cast/contiguous",
        r"copy|clone|contiguous|cast|convert|nchwtonhwc|nhwctonchw|" + _word("to|type_as|roll|flip"),
        "aten::copy_, aten::_to_copy, aten::clone, nchwToNhwcKernel",
    ),
    (
        "reduction",
        r"(?<!clamp_)"  # clamp_min is elementwise
        + _word("sum|mean|amax|amin|max|min|argmax|argmin|prod|norm|std|var|var_mean|logsumexp|cumsum|all|any")
        + r"|reduce|softmax|pool|vector_norm",
        "aten::sum, aten::softmax, aten::avg_pool2d, reduce_kernel",
    ),
    (
        "elementwise/activation",
        _word(
            "add|sub|rsub|mul|div|neg|abs|exp|log|pow|sqrt|rsqrt|sin|cos|erf|clamp|where|fill|zero"
            "|lerp|addcmul|addcdiv|maximum|minimum|reciprocal|square|sign|floor|ceil|round|remainder|fmod"
            "|eq|ne|ge|gt|le|lt|bitwise_(?:and|or|xor|not)|logical_(?:and|or|xor|not)"
        )
        + r"|elementwise|relu|gelu|silu|sigmoid|tanh|softplus|mish|hardswish|dropout|functor",
        "aten::add_, aten::gelu, aten::mul, vectorized_elementwise_kernel<FillFunctor>",
    ),
    (  # ops that only re-describe a tensor's storage, no arithmetic, no bytes moved, no kernel: their CPU time is
        # dispatch (PyTorch "Tensor Views"); ``reshape``/``flatten`` copy only through a nested ``aten::copy_``
        VIEWS,
        r"^aten::(?:view|_unsafe_view|view_as|transpose|t|numpy_t|mt|reshape|_reshape_alias|as_strided|expand|expand_as"
        r"|permute|unsqueeze|squeeze|alias|unflatten|flatten|select|slice|narrow|detach|split|split_with_sizes"
        r"|unsafe_split|unsafe_split_with_sizes|unbind|chunk|unsafe_chunk|movedim|view_as_real|view_as_complex|real|imag"
        r"|lift_fresh|diagonal|unfold)$",
        "aten::slice, aten::view",
    ),
)
OTHER = "other"
CATEGORIES: tuple[str, ...] = tuple(dict.fromkeys(row[0] for row in CATEGORY_TABLE)) + (OTHER,)
_COMPILED = tuple((category, re.compile(pattern)) for category, pattern, _ in CATEGORY_TABLE)

#: Input-shape signatures kept per op, most frequent first; the first call's too (on the model's input: reading 4).
MAX_SHAPES_PER_OP = 4
#: Enclosing ops kept per op (:attr:`OpStat.inside`), and the smallest share of its self time that lists one.
MAX_INSIDE_PER_OP = 3
MIN_INSIDE_SHARE = 0.05

SMALL_KERNEL_US = 5.0
"""A kernel shorter than this is "small": launching a kernel from eager PyTorch costs a few µs of host
time (docs/sources.md, method §3: "gaps of a few µs between small kernels" mean launch-bound), so back-to-back
kernels below it leave the GPU idle (tests/fixtures/traces/fno2d_128_b1_fp32_h200.json.gz)."""


@lru_cache(maxsize=4096)
def categorize(name: str) -> str:
    """The :data:`CATEGORY_TABLE` category of an op or kernel name; ``"other"`` when nothing matches."""
    lowered = name.lower()
    return next((category for category, pattern in _COMPILED if pattern.search(lowered)), OTHER)


@dataclass(frozen=True)
class OpStat(schemas.Plain):
    """One operator (or one kernel no op launched), summed over the table's active steps.

    Times in µs, memory in bytes (net: allocated minus freed), ``share`` a fraction of the table's
    ``total_us``; ``input_shapes``: distinct input-shape signatures, most frequent first (:data:`MAX_SHAPES_PER_OP`).
    ``inside``: the outermost ops of the step this op ran nested in, each with the fraction of its self CPU time
    spent there, largest first (at most :data:`MAX_INSIDE_PER_OP`, each at least :data:`MIN_INSIDE_SHARE`);
    empty where it ran at the top of the step, or where the table's builder does not know (a trace file).
    A copy that ``aten::einsum`` makes is the model's einsum's, not a copy the model wrote.
    """

    name: str
    category: str
    calls: int
    self_device_us: float
    total_device_us: float
    share: float
    self_cpu_us: float
    device_mem_bytes: int = 0
    self_device_mem_bytes: int = 0
    input_shapes: tuple[str, ...] = ()
    inside: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class OpTable(schemas.Plain):
    """The op table of one profiled config: ``ops`` by decreasing ``share`` of ``total_us``, the ``basis`` time
    (``"device"`` or ``"cpu"``, module docstring) summed over ``active_steps``, µs; ``source`` ``"profiler"`` or
    ``"trace"``; the kernels recorded and those shorter than ``small_kernel_us`` (None on a CPU basis,
    :mod:`surrobench.analysis.op_readings`); whether the input-shape and memory columns were recorded."""

    ops: tuple[OpStat, ...]
    basis: str
    total_us: float
    active_steps: int
    source: str
    kernel_count: int | None = None
    small_kernel_count: int | None = None
    small_kernel_us: float | None = None
    has_shapes: bool = False
    has_memory: bool = False
    category_shares: dict[str, float] = field(init=False, compare=False)

    def __post_init__(self) -> None:
        shares: dict[str, float] = defaultdict(float)
        for op in self.ops:
            shares[op.category] += op.share
        ordered = {k: float(v) for k, v in sorted(shares.items(), key=lambda kv: -kv[1])}
        object.__setattr__(self, "category_shares", ordered)

    def top_op(self) -> OpStat | None:
        """The row with the largest share, or None for an empty table."""
        return self.ops[0] if self.ops else None

    def self_us(self, op: OpStat) -> float:
        """``op``'s self time on this table's basis over the active steps, µs: device time on a device
        basis, CPU time on a CPU one."""
        return op.self_device_us if self.basis == "device" else op.self_cpu_us

    def ms_per_step(self) -> dict[str, float]:
        """``{op name: self time per profiled step, ms}`` on this table's basis (:meth:`self_us`)."""
        return {op.name: self.self_us(op) / (self.active_steps * 1e3) for op in self.ops}


class OpRows:
    """Per-name sums from which an :class:`OpTable` is built (by the two builders the module docstring names)."""

    def __init__(self) -> None:
        self.calls: Counter = Counter()
        self.self_device: Counter = Counter()
        self.total_device: Counter = Counter()
        self.self_cpu: Counter = Counter()
        self.mem: Counter = Counter()
        self.self_mem: Counter = Counter()
        self.shapes: dict[str, Counter] = defaultdict(Counter)
        #: ``{op: {outermost enclosing op: self CPU µs}}`` (:attr:`OpStat.inside`)
        self.inside: dict[str, Counter] = defaultdict(Counter)

    def _inside(self, name: str) -> tuple[tuple[str, float], ...]:
        own = self.self_cpu[name]
        if own <= 0 or name not in self.inside:
            return ()
        shares = [(outer, us / own) for outer, us in self.inside[name].most_common(MAX_INSIDE_PER_OP)]
        return tuple((outer, float(share)) for outer, share in shares if share >= MIN_INSIDE_SHARE)

    def _shapes(self, name: str) -> tuple[str, ...]:
        seen = self.shapes[name]  # insertion-ordered: the first call's signature first
        return tuple(dict.fromkeys([*dict(seen.most_common(MAX_SHAPES_PER_OP)), *list(seen)[:1]]))

    def finish(self, basis: str, **table) -> OpTable:
        times = self.self_device if basis == "device" else self.self_cpu
        total = float(sum(times.values()))
        ops = [
            OpStat(
                name=name,
                category=categorize(name),
                calls=self.calls[name],
                self_device_us=float(self.self_device[name]),
                total_device_us=float(self.total_device[name]),
                share=float(times[name] / total) if total > 0 else 0.0,
                self_cpu_us=float(self.self_cpu[name]),
                device_mem_bytes=int(self.mem[name]),
                self_device_mem_bytes=int(self.self_mem[name]),
                input_shapes=self._shapes(name),
                inside=self._inside(name),
            )
            for name in self.calls
        ]
        ops.sort(key=lambda op: (-op.share, -op.self_cpu_us, op.name))
        return OpTable(ops=tuple(ops), basis=basis, total_us=total, **table)

    def add_unattributed(self, durations: list[tuple[str, float]], attributed: Counter) -> tuple[Counter, Counter]:
        """Rows, named after the kernel, for device time no op claimed (e.g. a CUDA graph replay). Returns each
        kernel name's device time, us, and calls in ``durations``."""
        by_name, count = Counter(), Counter(name for name, _ in durations)
        for name, us in durations:
            by_name[name] += us
        for name, us in by_name.items():
            rest = us - attributed.get(name, 0.0)
            if rest > 1e-6 * max(us, 1.0):
                self.calls[name] += count[name]
                self.self_device[name] += rest
                self.total_device[name] += rest
        return by_name, count
