"""The four readings of an op table (docs/sources.md, method §2): 1. do the head ops match the model's structure;
2. fragmented small ops; 3. high memory, little time; 4. executed vs requested shapes. The thresholds are ours
(the method's are "for teaching only", §4), one line each."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from surrobench.analysis.op_families import held_inside, is_copy, low_intensity
from surrobench.records.ops import OpTable

HEAD_OPS = 5
"""Rows that make the "head" of the table (method §2: "the head operators of cuda_time_total")."""

#: Categories that carry the arithmetic of each zoo family; the head should be made of them.
EXPECTED_CATEGORIES: dict[str, tuple[str, ...]] = {
    "fno2d": ("fft", "gemm/matmul/einsum"),  # spectral convolution: rFFT, complex einsum, irFFT (Li et al. 2021)
    "unet2d": ("convolution", "normalization"),  # conv + GroupNorm blocks (Ronneberger 2015; Wu & He 2018)
    "pinn-mlp": ("gemm/matmul/einsum",),  # dense layers
    "deeponet": ("gemm/matmul/einsum",),  # branch and trunk MLPs, then a dot product
    "meshgraphnet": ("gemm/matmul/einsum", "concat/index/gather/scatter"),  # edge/node MLPs, gather/scatter
}

FRAGMENT_CATEGORIES = ("elementwise/activation", "copy/cast/contiguous", "concat/index/gather/scatter")
"""The method's \"elementwise, copy, cat" ops, the usual fusion targets (:func:`fragments`)."""

#: Fragment share at or above which we flag the table: fusing these could save about a third of kernel time or more.
#: Our choice; on the H200 fixtures FNO2d at 128 is 0.54 and the U-Net at 256 is 0.09.
FRAGMENTED_SHARE = 0.30
#: A CPU op call under this many microseconds costs mostly its dispatch (:func:`small_calls`); the threshold
#: ``cpu_small_call_us`` of :class:`surrobench.analysis.thresholds.Thresholds`.
CPU_SMALL_CALL_US = 20.0
#: The part of reading 2 that holds the tiny calls of low-intensity ops outside :data:`FRAGMENT_CATEGORIES`.
TINY_CALLS = "tiny low-intensity calls"

#: An op must hold at least this fraction of the memory allocated during the steps to be a candidate...
MEMORY_SHARE_MIN = 0.10
#: ...and at least this many times its share of device time: "short own time, high memory column".
MEMORY_TIME_RATIO = 2.0


@dataclass(frozen=True)
class StructureReading:
    """Reading 1. ``matches`` is None for a model without an expectation (a user model)."""

    model: str
    expected: tuple[str, ...]
    head: tuple[tuple[str, str, float], ...]  # (name, category, share) of the first HEAD_OPS rows
    top_category: str | None
    top_category_share: float
    expected_share: float
    matches: bool | None


@dataclass(frozen=True)
class FragmentationReading:
    """Reading 2. Kernel counts are None on a CPU basis."""

    share: float
    by_category: dict[str, float]
    kernel_count: int | None
    small_kernel_count: int | None
    small_kernel_us: float | None
    flagged: bool


@dataclass(frozen=True)
class MemoryReading:
    """Reading 3: ``candidates`` by ``mem_share``; ``available`` False without memory or device kernels."""

    available: bool
    candidates: tuple[dict, ...]


@dataclass(frozen=True)
class ShapeReading:
    """Reading 4; ``matches`` None without recorded shapes or when compiled (``unknown_why``); ``requested`` the
    primary input's shape, ``inputs`` every input's (several only), ``missing`` those no op received."""

    requested: tuple[int, ...]
    consumers: tuple[str, ...]  # ops that received a tensor of a requested shape (up to HEAD_OPS)
    head_shapes: dict[str, tuple[str, ...]]  # executed input shapes of the head ops
    matches: bool | None
    unknown_why: str | None = None
    inputs: tuple[tuple[int, ...], ...] = ()
    missing: tuple[tuple[int, ...], ...] = ()


@dataclass(frozen=True)
class Readings:
    """All four readings of one op table."""

    structure: StructureReading
    fragmentation: FragmentationReading
    memory: MemoryReading
    shapes: ShapeReading

    def to_json(self) -> dict:
        return asdict(self)


def read_structure(table: OpTable, model: str) -> StructureReading:
    """Reading 1: the head rows and the leading category against :data:`EXPECTED_CATEGORIES`."""
    expected = EXPECTED_CATEGORIES.get(model, ())
    top, top_share = next(iter(table.category_shares.items()), (None, 0.0))
    return StructureReading(
        model=model,
        expected=expected,
        head=tuple((op.name, op.category, op.share) for op in table.ops[:HEAD_OPS]),
        top_category=top,
        top_category_share=top_share,
        expected_share=sum(table.category_shares.get(c, 0.0) for c in expected),
        matches=(top in expected) if expected else None,
    )


def small_calls(table: OpTable, small_call_us: float = CPU_SMALL_CALL_US) -> dict:
    """On a CPU basis: ``{name: (calls per step, us per call)}`` of the low-intensity ops
    (:func:`surrobench.analysis.op_families.low_intensity`) whose calls average under ``small_call_us`` in ``table``
    (:func:`surrobench.analysis.evidence.deflate`'s); empty on a device basis. An op whose nested ops hold more self
    time than it (:func:`held_inside`: ``aten::softmax`` around ``aten::_softmax``) is no small call."""
    if table.basis != "cpu":
        return {}
    nested, small = held_inside(table), {}
    for op in table.ops:
        if low_intensity(op.name) and op.calls and (us := op.self_cpu_us / op.calls) < small_call_us:
            if nested.get(op.name, 0.0) <= op.self_cpu_us:
                small[op.name] = (op.calls / table.active_steps, us)
    return small


def fragments(table: OpTable, small_call_us: float = CPU_SMALL_CALL_US) -> dict[str, str]:
    """``{op: part}`` of reading 2: the ops of :data:`FRAGMENT_CATEGORIES` (of the last only concatenations: a gather or
    a scatter is irregular access, not a fragment), each under its category; on a CPU basis only the small calls
    (:func:`small_calls`: many calls, little time each), those of other low-intensity ops as :data:`TINY_CALLS`."""
    tiny, parts = small_calls(table, small_call_us), {}
    for op in table.ops:
        concat = op.category == FRAGMENT_CATEGORIES[2] and is_copy(op.name)
        fragment = concat or op.category in FRAGMENT_CATEGORIES[:2]
        if op.name in tiny or (fragment and table.basis != "cpu"):
            parts[op.name] = op.category if fragment else TINY_CALLS
    return parts


def read_fragmentation(table: OpTable, small_call_us: float = CPU_SMALL_CALL_US) -> FragmentationReading:
    """Reading 2: the share of :func:`fragments` by part (tiny calls under half a percent, which print as 0%, left
    out), and the small-kernel count. The one definition profile and diagnose print."""
    parts, by_category = fragments(table, small_call_us), dict.fromkeys(FRAGMENT_CATEGORIES, 0.0)
    for op in (op for op in table.ops if op.name in parts):
        by_category[parts[op.name]] = by_category.get(parts[op.name], 0.0) + op.share
    if by_category.get(TINY_CALLS, 1.0) < 0.005:
        del by_category[TINY_CALLS]
    share = sum(by_category.values())
    kernels = (table.kernel_count, table.small_kernel_count, table.small_kernel_us)
    return FragmentationReading(share, by_category, *kernels, share >= FRAGMENTED_SHARE)


def read_memory(table: OpTable) -> MemoryReading:
    """Reading 3: kernel ops with memory share >= :data:`MEMORY_SHARE_MIN` and :data:`MEMORY_TIME_RATIO` x time."""
    allocated = sum(max(op.self_device_mem_bytes, 0) for op in table.ops)
    if not table.has_memory or table.basis != "device" or allocated <= 0:
        return MemoryReading(available=False, candidates=())
    candidates = []
    for op in table.ops:
        mem_share = min(max(op.device_mem_bytes, 0) / allocated, 1.0)
        if op.self_device_us > 0 and mem_share >= MEMORY_SHARE_MIN and mem_share >= MEMORY_TIME_RATIO * op.share:
            mem = {"device_mem_bytes": op.device_mem_bytes, "self_device_mem_bytes": op.self_device_mem_bytes}
            candidates.append(
                {"name": op.name, "category": op.category, **mem, "mem_share": mem_share, "time_share": op.share}
            )
    candidates.sort(key=lambda c: -c["mem_share"])
    return MemoryReading(available=True, candidates=tuple(candidates[:HEAD_OPS]))


def _signatures(op_shapes: tuple[str, ...]) -> list[list]:
    parsed = []
    for text in op_shapes:
        try:
            parsed.append(json.loads(text))
        except ValueError:  # a signature that is not plain nested ints: cannot hold the requested shape
            continue
    return parsed


def read_shapes(table: OpTable, *requested: tuple[int, ...], compiled: bool = False) -> ShapeReading:
    """Reading 4: ops that received exactly one of the ``requested`` shapes (each input's, the primary first) and
    the head ops' shapes; it matches when every input reached an op."""
    shapes = [tuple(s) for s in requested]
    heads = {op.name: op.input_shapes for op in table.ops[:HEAD_OPS]}
    head = {"head_shapes": heads, "inputs": tuple(shapes) if len(shapes) > 1 else ()}
    if not table.has_shapes:
        return ShapeReading(shapes[0], (), matches=None, **head)
    args = {op.name: [a for s in _signatures(op.input_shapes) for a in s if isinstance(a, list)] for op in table.ops}
    reached = {s: [name for name, got in args.items() if list(s) in got] for s in shapes}
    consumers = tuple(dict.fromkeys(name for names in reached.values() for name in names))
    if compiled and not consumers:
        why = "the model ran compiled: its ops receive the compiled graph's buffers, not the input"
        return ShapeReading(shapes[0], (), matches=None, unknown_why=why, **head)
    missing = tuple(s for s, names in reached.items() if not names)
    return ShapeReading(shapes[0], consumers[:HEAD_OPS], matches=not missing, missing=missing, **head)


def read_table(table: OpTable, model: str, *requested: tuple[int, ...], compiled: bool = False) -> Readings:
    """All four readings of ``table`` (on CPU less the profiler's cost: :func:`surrobench.analysis.evidence.deflate`)
    for ``model`` run on inputs of the ``requested`` shapes (``compiled``: under ``torch.compile``, see
    :func:`read_shapes`)."""
    shapes = read_shapes(table, *requested, compiled=compiled)
    return Readings(read_structure(table, model), read_fragmentation(table), read_memory(table), shapes)
