"""The op table: which operators cost the time (course ch. 3, section 2; intro text, section 3).

One row per operator name, aggregated over the profiled (active) steps:

- ``self_device_us``: device time of the kernels, copies and memsets the op launched itself. Kernels are
  attributed to their launching op (the innermost op around the launch call), never to the ops or user
  ranges around it, so self times never double count and their shares sum to at most 1.
- ``total_device_us``: self device time plus that of the ops nested in it (for reading, not for shares).
- ``share``: the row's self time over the table's ``total_us``. On a GPU run the basis is *kernel time*
  (all kernels, copies and memsets, user annotations such as ``ProfilerStep#N`` or ``surrobench::forward``
  and their GPU-side copies excluded); device work launched outside any op (a CUDA graph replay inside a
  user range) gets its own row named after the kernel, so shares sum to exactly 1. On a CPU run there is
  no device: the basis is the ops' self CPU time.
- memory columns: bytes allocated minus freed inside the op (with / without nested ops), of the run's
  device (host memory on a CPU run), as ``profile_memory`` records them.

Two builders fill the same :class:`OpTable`: :func:`op_table_from_events` from torch.profiler's in-memory
``FunctionEvent`` list (shapes and memory included), and :func:`op_table_from_timeline` from a Kineto
trace loaded into a :class:`~surrobench.trace.model.Timeline` (the Timeline keeps neither input shapes
nor memory events, so those columns are empty there).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from surrobench.analysis.activity import KERNEL, gpu_activity, launching_op
from surrobench.trace.model import Timeline


def _word(alternatives: str) -> str:
    """Regex for whole words of an op name, where ``_`` and ``::`` also separate words (``aten::add_``)."""
    return rf"(?<![a-z0-9])(?:{alternatives})(?![a-z0-9])"


#: The category table: ``(category, pattern, examples)``, first match wins, patterns are searched in the
#: lower-cased name of an op (``aten::native_group_norm``) or of a kernel that no op launched
#: (``regular_fft<...>``). The order settles overlaps: ``CatArrayBatchedCopy`` is concat before copy,
#: ``sm80_xmma_fprop_implicit_gemm`` is a convolution before GEMM, ``addmm`` is GEMM before ``add``.
#: Pooling counts as a (windowed) reduction and nearest/bilinear upsampling as a gather.
CATEGORY_TABLE: tuple[tuple[str, str, str], ...] = (
    ("communication", r"nccl|c10d|gloo|record_param_comms|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all"
     r"|broadcast", "ncclDevKernel_AllReduce_Sum_f32, c10d::allreduce_, record_param_comms"),
    ("memcpy/memset", r"^(?:memcpy|memset)|cudamem(?:cpy|set)", "Memcpy HtoD (Pageable -> Device), Memset (Device)"),
    ("fft", r"fft|(?<![a-z])(?:r2c|c2r|c2c)(?![a-z])", "aten::_fft_r2c, regular_fft<...>, vector_fft_symm_c2r"),
    ("convolution", r"conv(?!ert)|fprop|dgrad|wgrad|winograd",
     "aten::cudnn_convolution, implicit_convolve_sgemm, sm80_xmma_fprop_implicit_gemm"),
    ("normalization", r"(?:group|layer|batch|instance|rms)_?norm|rowwisemoments|computefusedparams|welford",
     "aten::native_group_norm, RowwiseMomentsCUDAKernel, vectorized_layer_norm_kernel"),
    ("gemm/matmul/einsum",
     _word("addmm|addmv|addbmm|baddbmm|bmm|mm|mv|matmul|linear|einsum|dot|vdot|tensordot") + "|gemm|gemv|cublas",
     "aten::bmm, aten::addmm, aten::einsum, cutlass_80_tensorop_s1688gemm, gemvx::kernel"),
    ("concat/index/gather/scatter",
     _word("cat|concat|stack|hstack|vstack|take|put|embedding|nonzero|masked_select|masked_scatter")
     + r"|index|gather|scatter|catarray|upsample",
     "aten::cat, aten::index_select, aten::scatter_add_, CatArrayBatchedCopy, upsample_nearest2d"),
    ("copy/cast/contiguous", r"copy|clone|contiguous|cast|convert|nchwtonhwc|nhwctonchw|" + _word("to|type_as"),
     "aten::copy_, aten::_to_copy, aten::clone, nchwToNhwcKernel"),
    ("reduction",
     _word("sum|mean|amax|amin|max|min|argmax|argmin|prod|norm|std|var|var_mean|logsumexp|cumsum|all|any")
     + r"|reduce|softmax|pool|vector_norm",
     "aten::sum, aten::softmax, aten::avg_pool2d, reduce_kernel"),
    ("elementwise/activation",
     _word("add|sub|rsub|mul|div|neg|abs|exp|log|pow|sqrt|rsqrt|sin|cos|erf|clamp|clamp_min|where|fill|zero"
           "|lerp|addcmul|addcdiv|maximum|minimum|reciprocal|square|sign|floor|ceil|round|remainder|fmod")
     + r"|elementwise|relu|gelu|silu|sigmoid|tanh|softplus|mish|hardswish|dropout|functor",
     "aten::add_, aten::gelu, aten::mul, vectorized_elementwise_kernel<FillFunctor>"),
)
OTHER = "other"
CATEGORIES: tuple[str, ...] = tuple(row[0] for row in CATEGORY_TABLE) + (OTHER,)
_COMPILED = tuple((category, re.compile(pattern)) for category, pattern, _ in CATEGORY_TABLE)

#: Names of the ranges torch.profiler and surrobench put around steps and phases; never rows. In memory
#: torch renames ``ProfilerStep#N`` to ``ProfilerStep*``.
_ANNOTATION_NAME = re.compile(r"^ProfilerStep(?:#\d+|\*)$|^surrobench::")
_MEMORY_EVENTS = frozenset({"[memory]", "[OutOfMemory]"})
#: Input-shape signatures kept per op, most frequent first.
MAX_SHAPES_PER_OP = 4

SMALL_KERNEL_US = 5.0
"""A kernel shorter than this is "small": launching a kernel from eager PyTorch costs a few µs of host
time (course ch. 3, section 3: "gaps of a few µs between small kernels" mean launch-bound), so back-to-back
kernels below it leave the GPU idle. On the H200 fixture FNO2d at 128x128 the median kernel is 2.1 µs and
231 of 237 kernels are under 5 µs, with 0.21 ms of kernel time in a ~1 ms step (../GPU notes, fixtures)."""


@lru_cache(maxsize=4096)
def categorize(name: str) -> str:
    """The :data:`CATEGORY_TABLE` category of an op or kernel name; ``"other"`` when nothing matches."""
    lowered = name.lower()
    for category, pattern in _COMPILED:
        if pattern.search(lowered):
            return category
    return OTHER


@dataclass(frozen=True)
class OpStat:
    """One operator (or one kernel no op launched), summed over the table's active steps.

    Times in µs, memory in bytes (net: allocated minus freed), ``share`` a fraction of the table's
    ``total_us``; ``input_shapes`` are the distinct input-shape signatures seen, most frequent first.
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

    def to_json(self) -> dict:
        return {**self.__dict__, "input_shapes": list(self.input_shapes)}


@dataclass(frozen=True)
class OpTable:
    """The op table of one profiled config.

    Attributes:
        ops: rows by decreasing ``share``.
        basis: ``"device"`` (shares of kernel time) or ``"cpu"`` (shares of op self CPU time).
        total_us: the basis time summed over the active steps, µs.
        active_steps: profiled steps the sums cover.
        source: ``"profiler"`` (in-memory events) or ``"trace"`` (a Kineto trace file).
        kernel_count, small_kernel_count: kernels recorded, and those shorter than
            ``small_kernel_us`` (None on a CPU basis); see :mod:`surrobench.analysis.op_readings`.
        has_shapes, has_memory: whether the input-shape and memory columns were recorded.
    """

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

    def to_json(self) -> dict:
        """JSON form: every attribute, rows as dicts; shares are fractions."""
        return {
            "basis": self.basis, "total_us": self.total_us, "active_steps": self.active_steps,
            "source": self.source, "kernel_count": self.kernel_count,
            "small_kernel_count": self.small_kernel_count, "small_kernel_us": self.small_kernel_us,
            "has_shapes": self.has_shapes, "has_memory": self.has_memory,
            "category_shares": self.category_shares, "ops": [op.to_json() for op in self.ops],
        }  # fmt: skip

    @classmethod
    def from_json(cls, d: dict) -> "OpTable":
        """Inverse of :meth:`to_json`. Raises KeyError for a missing key."""
        ops = tuple(OpStat(**{**op, "input_shapes": tuple(op["input_shapes"])}) for op in d["ops"])
        keys = ("basis", "total_us", "active_steps", "source", "kernel_count", "small_kernel_count",
                "small_kernel_us", "has_shapes", "has_memory")  # fmt: skip
        return cls(ops=ops, **{k: d[k] for k in keys})


class _Rows:
    """Per-name accumulator for the builders."""

    def __init__(self) -> None:
        self.calls: Counter = Counter()
        self.self_device: Counter = Counter()
        self.total_device: Counter = Counter()
        self.self_cpu: Counter = Counter()
        self.mem: Counter = Counter()
        self.self_mem: Counter = Counter()
        self.shapes: dict[str, Counter] = defaultdict(Counter)

    def finish(self, basis: str, **table) -> OpTable:
        times = self.self_device if basis == "device" else self.self_cpu
        total = float(sum(times.values()))
        ops = [
            OpStat(
                name=name, category=categorize(name), calls=self.calls[name],
                self_device_us=float(self.self_device[name]), total_device_us=float(self.total_device[name]),
                share=float(times[name] / total) if total > 0 else 0.0, self_cpu_us=float(self.self_cpu[name]),
                device_mem_bytes=int(self.mem[name]), self_device_mem_bytes=int(self.self_mem[name]),
                input_shapes=tuple(s for s, _ in self.shapes[name].most_common(MAX_SHAPES_PER_OP)),
            )
            for name in self.calls
        ]  # fmt: skip
        ops.sort(key=lambda op: (-op.share, -op.self_cpu_us, op.name))
        return OpTable(ops=tuple(ops), basis=basis, total_us=total, **table)


def _attr(obj, *names: str, default=0):
    """The first of ``names`` that ``obj`` has: torch renamed ``*_cuda_*`` to ``*_device_*`` in 2.4."""
    for name in names:
        if hasattr(obj, name):
            return getattr(obj, name)
    return default


def _is_device_event(event) -> bool:
    return str(_attr(event, "device_type", default="CPU")).rsplit(".", 1)[-1] != "CPU"


def _is_annotation(event) -> bool:
    return bool(_attr(event, "is_user_annotation", default=False)) or bool(_ANNOTATION_NAME.match(event.name))


def _is_kernel(name: str) -> bool:
    return categorize(name) != "memcpy/memset"


def op_table_from_events(events, *, active_steps: int, small_kernel_us: float = SMALL_KERNEL_US) -> OpTable:
    """The op table from torch.profiler ``FunctionEvent`` objects (``prof.events()`` of one cycle).

    Reads ``self_device_time_total`` / ``device_time_total`` / ``device_memory_usage`` and their older
    ``*_cuda_*`` spellings, so it works across torch versions. User annotations (``record_function``,
    ``ProfilerStep#N``) are not rows, and their GPU-side copies are not kernel time. The basis is the
    device when any device event was recorded, else the CPU.

    Args:
        events: iterable of ``FunctionEvent``-like objects (times in µs).
        active_steps: the number of steps the events cover.
        small_kernel_us: threshold for ``small_kernel_count``, µs.
    """
    events = list(events)
    annotations = {e.name for e in events if not _is_device_event(e) and _is_annotation(e)}
    device = [e for e in events if _is_device_event(e) and e.name not in annotations and not _is_annotation(e)]
    rows, attributed, on_device = _Rows(), Counter(), bool(device)
    for e in events:
        if _is_device_event(e) or e.name in annotations or e.name in _MEMORY_EVENTS or e.is_async:
            continue
        rows.calls[e.name] += 1
        rows.self_device[e.name] += _attr(e, "self_device_time_total", "self_cuda_time_total")
        rows.total_device[e.name] += _attr(e, "device_time_total", "cuda_time_total")
        rows.self_cpu[e.name] += e.self_cpu_time_total
        rows.mem[e.name] += _attr(e, "device_memory_usage", "cuda_memory_usage") if on_device else e.cpu_memory_usage
        rows.self_mem[e.name] += (_attr(e, "self_device_memory_usage", "self_cuda_memory_usage") if on_device
                                  else e.self_cpu_memory_usage)  # fmt: skip
        if e.input_shapes:
            rows.shapes[e.name][str(e.input_shapes)] += 1
        for kernel in e.kernels:
            attributed[kernel.name] += kernel.duration
    durations = [(e.name, e.time_range.elapsed_us()) for e in device]
    _add_unattributed(rows, durations, attributed)
    kernels = [us for name, us in durations if _is_kernel(name)]
    return rows.finish(
        "device" if device else "cpu", active_steps=active_steps, source="profiler",
        kernel_count=len(kernels) if device else None,
        small_kernel_count=sum(us < small_kernel_us for us in kernels) if device else None,
        small_kernel_us=small_kernel_us if device else None,
        has_shapes=bool(rows.shapes), has_memory=True,
    )  # fmt: skip


def _add_unattributed(rows: _Rows, durations: list[tuple[str, float]], attributed: Counter) -> None:
    """Rows, named after the kernel, for device time no op claimed (e.g. a CUDA graph replay)."""
    by_name, count = Counter(), Counter()
    for name, us in durations:
        by_name[name] += us
        count[name] += 1
    for name, us in by_name.items():
        rest = us - attributed.get(name, 0.0)
        if rest > 1e-6 * max(us, 1.0):
            rows.calls[name] += count[name]
            rows.self_device[name] += rest
            rows.total_device[name] += rest


def op_table_from_timeline(tl: Timeline, *, small_kernel_us: float = SMALL_KERNEL_US) -> OpTable:
    """The op table from a loaded trace: CPU ops, their nesting, and the GPU work each launched.

    A GPU op belongs to the CPU op that issued its launch call, as
    :func:`~surrobench.analysis.activity.launching_op` finds it (the op with the call's External id, else
    the top-level op around the call), the attribution the launch stats use too. ``ranges`` (user
    annotations) are not CPU ops, so they never hold device time. Input shapes and memory are not in a
    Timeline: those columns stay empty.
    """
    ops, act = tl.cpu_ops, gpu_activity(tl)
    owner = launching_op(tl, act.launch)
    dur_us = (act.end_ns - act.start_ns) / 1e3
    self_device = np.bincount(owner[owner >= 0], weights=dur_us[owner >= 0], minlength=len(ops))
    parent, order = _parents(ops)
    self_cpu, total_device = ops.dur_ns / 1e3, self_device.copy()
    for i in order[::-1]:  # children before their parents
        if parent[i] >= 0:
            self_cpu[parent[i]] -= ops.dur_ns[i] / 1e3
            total_device[parent[i]] += total_device[i]
    rows = _Rows()
    for i, name_id in enumerate(ops.name_id.tolist()):
        name = tl.name(name_id)
        rows.calls[name] += 1
        rows.self_device[name] += self_device[i]
        rows.total_device[name] += total_device[i]
        rows.self_cpu[name] += max(self_cpu[i], 0.0)
    orphans = owner < 0
    _add_unattributed(rows, [(tl.name(n), us) for n, us in zip(act.name_id[orphans], dur_us[orphans])], Counter())
    kernel_us = dur_us[act.op_type == KERNEL]
    device = len(act) > 0
    return rows.finish(
        "device" if device else "cpu", active_steps=max(len(tl.steps), 1), source="trace",
        kernel_count=int(kernel_us.size) if device else None,
        small_kernel_count=int((kernel_us < small_kernel_us).sum()) if device else None,
        small_kernel_us=small_kernel_us if device else None,
    )  # fmt: skip


def _parents(ops) -> tuple[np.ndarray, np.ndarray]:
    """(row of the innermost CPU op enclosing each op on its thread or -1, rows parents-first)."""
    parent = np.full(len(ops), -1, dtype=np.int64)
    stacks: dict[tuple[int, int], list[int]] = defaultdict(list)
    end = ops.end_ns
    order = np.lexsort((-ops.dur_ns, ops.start_ns))
    for i in order.tolist():
        stack = stacks[(int(ops.rank[i]), int(ops.tid[i]))]
        while stack and end[stack[-1]] <= ops.start_ns[i]:
            stack.pop()
        if stack:
            parent[i] = stack[-1]
        stack.append(i)
    return parent, order


def op_table_from_trace(path: Path | str, *, small_kernel_us: float = SMALL_KERNEL_US) -> OpTable:
    """:func:`op_table_from_timeline` of the Kineto trace at ``path`` (file or per-rank folder, gzip or not).

    Raises:
        UsageError: the path is missing or not a readable trace.
    """
    from surrobench.trace import load_trace

    return op_table_from_timeline(load_trace(path), small_kernel_us=small_kernel_us)
