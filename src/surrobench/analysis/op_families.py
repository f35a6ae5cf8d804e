"""Operator families and their cause and action: the one table every operator finding reads. A family groups
op-table categories (:data:`surrobench.analysis.ops.CATEGORY_TABLE`); keep each clause one imperative sentence
(:class:`surrobench.records.findings.Clause` carries its remedy ids).

Sources: normalization (Wu and He, ECCV 2018; channels_last is measured, not ruled on:
docs/benchmarks/h200-diagnosis.md); FFT (cuFFT docs, "Accuracy and Performance", "Half-precision cuFFT Transforms";
PyTorch "CUDA semantics", cuFFT plan cache); scatter/gather (CUDA C++ Best Practices Guide, "Coalesced Access to
Global Memory"); distance/selection (the kNN of DGCNN, Wang et al., TOG 2019); convolution and matmul (Hopper tuning
guide; PyTorch "cuDNN"); elementwise chains (PyTorch "torch.compile"). The other words a finding uses on a GPU
and on a CPU: :func:`words`."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from surrobench.records.findings import Clause
from surrobench.records.ops import VIEWS, OpTable, categorize
from surrobench.records.run import grouped


@dataclass(frozen=True)
class OpFamily:
    """One row of :data:`OP_FAMILIES`: GPU and CPU cause and action of its categories (no ``cpu_cause``: the GPU's)."""

    name: str
    categories: tuple[str, ...]
    cause: str
    action: tuple[Clause, ...]
    cpu_action: tuple[Clause, ...]
    cpu_cause: str = ""

    @property
    def low_intensity(self) -> bool:
        """O(1) FLOPs per byte: every family but the matmuls and convolutions."""
        return self.name not in ("convolution", "im2col convolution", "gemm/matmul/einsum")


THREADS = Clause("use every core (torch.get_num_threads())", ("threads",), direction="up")
_TOPK = Clause("select the k nearest with topk, not a full sort")
_LARGEST = Clause("topk for the k largest (k << row length), not a full sort")
_FUSE_NORM = Clause("fuse the norm with its activation (torch.compile)", ("compile",))
_INT32 = Clause("use int32 indices")
_REORDER = Clause("renumber the destinations for locality (a graph's nodes: e.g. reverse Cuthill-McKee)")
_SORTED = Clause("order the indices (or the rows they point to) so that neighbouring reads touch neighbouring memory")
_NHWC = Clause("channels_last memory for the 4-D tensors permuted and copied", ("channels_last",))
_GRID = Clause("order the grid's points so that neighbouring points read neighbouring memory")
_SLICE = Clause("slice once per step, not per row")  # only where the views named slice (:func:`family_actions`)
_VIEWS = (Clause("trace the views away (torch.compile)", ("compile",)), _SLICE)
_CSR = "sort the added rows by destination and use a segment/CSR reduction"
_BIN = "evenly spaced boundaries: compute the bin as floor((x - first) / spacing), no search"

OP_FAMILIES: tuple[OpFamily, ...] = (
    OpFamily(
        "normalization",
        ("normalization",),
        "a reduction per (batch x group) row then an elementwise pass: at a small batch too few rows to keep "
        "the processors busy",
        (Clause("raise the batch (more rows reduce in parallel)"), _FUSE_NORM),
        (Clause("raise the batch"), _FUSE_NORM, Clause("check torch.get_num_threads()", ("threads",))),
        "a reduction per (batch x group) row then an elementwise pass: at a small batch too few rows to keep the "
        "cores busy",
    ),
    OpFamily(
        "fft",
        ("fft",),
        "FFTs move the whole grid per pass; odd or prime sizes take slower kernels, small transforms each launch",
        (
            Clause("use smooth grid sizes (2^a 3^b 5^c 7^d, best powers of 2)"),
            Clause("batch the transforms in one call over (B, C) (torch.fft.rfftn over the last dims)"),
            Clause("half precision only at power-of-2 sizes"),
            Clause("keep cuFFT plans cached (torch.backends.cuda.cufft_plan_cache.max_size >= the sizes in use)"),
        ),
        (Clause("use smooth grid sizes (2^a 3^b 5^c 7^d)"), Clause("batch the transforms in one call"), THREADS),
        "FFTs move the whole grid per pass; odd or prime sizes take slower code paths, small transforms each pay "
        "a call's overhead",
    ),
    OpFamily(
        "scatter/gather/index",
        ("concat/index/gather/scatter",),
        "irregular, non-coalesced reads and writes by index",
        (_SORTED, _INT32),
        (_SORTED, _INT32),
        "irregular access by index (cache misses on every row)",
    ),
    OpFamily(
        "grid sampling",
        (),
        "reads at the coordinates of a grid (grid_sample): scattered where neighbouring points read far apart",
        (_GRID,),
        (_GRID,),
    ),
    OpFamily(
        "index reduction",
        (),
        "adds by index (scatter_add, index_add): atomic adds that collide where many rows share a destination",
        (Clause(_CSR + " (torch_geometric SparseTensor, torch.segment_reduce), not atomic adds"), _REORDER, _INT32),
        (Clause(_CSR), _REORDER, _INT32),
        "adds by index (scatter_add, index_add) that serialize where many rows share a destination",
    ),
    OpFamily(
        "distance/selection",
        ("distance/selection",),
        "all-pairs distances (P x R entries to keep k << R) then a sort or selection over each row",
        (_TOPK, Clause("use a grid or KD-tree kNN (torch_cluster.knn)"), Clause("reuse the indices")),
        (_TOPK, Clause("use a KD-tree kNN (scipy's cKDTree)"), THREADS),
    ),
    OpFamily(
        "sort/selection",
        (),
        "a sort or selection along each row: passes over the row with little arithmetic in each",
        (_LARGEST, Clause("reuse the indices")),
        (_LARGEST, Clause("reuse the indices"), THREADS),
    ),
    OpFamily(
        "search",
        (),
        "a binary search per element over sorted boundaries (searchsorted, bucketize): a dependent load per step",
        (Clause(_BIN),),
        (Clause(_BIN), THREADS),
    ),
    OpFamily(
        "convolution",
        ("convolution",),
        "convolutions below the tensor-core peak: fp32 math, or a cuDNN algorithm not tuned for the shape",
        (
            Clause(
                "use tensor cores: --precision tf32 (torch.backends.cuda.matmul.allow_tf32 / cudnn.allow_tf32) or bf16",
                ("tf32", "bf16"),
            ),
            Clause("set torch.backends.cudnn.benchmark = True", ("cudnn_benchmark",)),
            Clause("channel counts multiples of 8"),
        ),
        (
            Clause(
                "use every core for oneDNN (torch.get_num_threads(), OMP_NUM_THREADS)", ("threads",), direction="up"
            ),
            Clause("a larger batch"),
            Clause("channels_last convolutions (oneDNN)", ("channels_last",)),
        ),
        "convolutions below the cores' matmul peak: too few threads, a small batch, or a layout oneDNN reorders",
    ),
    OpFamily(
        "im2col convolution",
        (),
        "PyTorch's own im2col + GEMM convolution, not cuDNN's: cuDNN off, or not taking the layer's parameters",
        (Clause("check torch.backends.cudnn.enabled"),),
        (Clause("bf16 autocast (PyTorch then takes oneDNN's convolution)", ("bf16",)), THREADS),
        "PyTorch's own im2col + GEMM convolution, not oneDNN's (oneDNN declines some dtypes and small inputs)",
    ),
    OpFamily(
        "gemm/matmul/einsum",
        ("gemm/matmul/einsum",),
        "matmuls below the tensor-core peak: fp32 or complex math, small or unaligned shapes",
        (
            Clause("use tensor cores: --precision tf32 or bf16", ("tf32", "bf16")),
            Clause("shapes in multiples of 8/16"),
            Clause("a larger batch"),
            Clause("one batched matmul (bmm, a single einsum) instead of many small ones"),
        ),
        (
            Clause("use every core for MKL (torch.get_num_threads(), OMP_NUM_THREADS)", ("threads",), direction="up"),
            Clause("a larger batch"),
            Clause("one batched matmul"),
        ),
        "matmuls below the cores' peak: too few threads, small or unaligned shapes, complex math",
    ),
    OpFamily(
        "elementwise",
        ("elementwise/activation",),
        "each eager op is its own kernel reading and writing the whole tensor",
        (Clause("fuse the chain of elementwise ops into one kernel: torch.compile", ("compile",)),),
        (Clause("fuse the chain of elementwise ops: torch.compile", ("compile",)),),
        "each eager op is its own pass over the whole tensor through memory",
    ),
    OpFamily(
        "reduction",
        ("reduction",),
        "each eager reduction (sum, softmax, pooling) is its own kernel reading the whole tensor for a smaller one",
        (Clause("fuse the reduction with the elementwise ops around it into one kernel: torch.compile", ("compile",)),),
        (Clause("fuse the reduction with the elementwise ops around it: torch.compile", ("compile",)),),
        "each eager reduction (sum, softmax, pooling) is its own pass over the whole tensor through memory",
    ),
    OpFamily(
        "copy/cast/cat",
        ("copy/cast/contiguous", "memcpy/memset"),
        "bytes copied that the model does not need: casts, layout changes, concatenation",
        (
            Clause("cast weights once and feed inputs in the compute dtype"),
            Clause("keep one memory layout (no .contiguous() after permute)"),
            Clause("write into a preallocated buffer instead of torch.cat"),
        ),
        (Clause("cast once, keep one layout, preallocate instead of torch.cat"),),
    ),
    OpFamily(
        "view/metadata", (VIEWS,), "views do no arithmetic, move no bytes: each call costs its dispatch", _VIEWS, _VIEWS
    ),
)
_BY_NAME = {f.name: f for f in OP_FAMILIES}
_BY_CATEGORY = {c: f for f in OP_FAMILIES for c in f.categories}
#: Ops of the gather/scatter category with a family of their own, first match wins: those that only concatenate
#: (with the copies), reduce by index (a scatter_ writes, a scatter_add_ adds) or sample at a grid's coordinates.
_GATHER_FAMILIES = (
    ("copy/cast/cat", r"(?<![a-z0-9])(?:cat|concat|stack|hstack|vstack)(?![a-z0-9])|catarray"),
    ("index reduction", r"scatter_add|scatter_reduce|index_add|index_reduce|segment_reduce|embedding_bag"),
    ("grid sampling", r"grid_sampl"),
)
#: PyTorch's own im2col + GEMM convolutions, taken over oneDNN for a small fp32 input at batch 1 (not at 2, not in
#: bf16: ``ConvParams::use_mkldnn``, aten/src/ATen/native/Convolution.cpp; seen in torch 2.13) and without cuDNN.
_IM2COL = re.compile(r"slow_conv|thnn_conv")
#: All-pairs distance ops, the evidence that a selection is a nearest-neighbour search; sorted-boundary searches.
_DISTANCE = re.compile(r"[cp]dist|euclidean_dist")
_SEARCH = re.compile(r"searchsorted|bucketize")


def family_of(name: str, knn: bool = False) -> OpFamily | None:
    """The family of an op or kernel name, None for ops of no family (communication, other); a sort or selection
    is a nearest-neighbour search's only with all-pairs distances in evidence (``knn``, :func:`pairwise`)."""
    category, lowered = categorize(name), name.lower()
    if category == "concat/index/gather/scatter":
        own = (f for f, pattern in _GATHER_FAMILIES if re.search(pattern, lowered))
        return _BY_NAME[next(own, "scatter/gather/index")]
    if category == "distance/selection" and (_SEARCH.search(lowered) or not (knn or _DISTANCE.search(lowered))):
        return _BY_NAME["search" if _SEARCH.search(lowered) else "sort/selection"]
    return _BY_NAME["im2col convolution"] if _IM2COL.search(lowered) else _BY_CATEGORY.get(category)


def is_copy(name: str) -> bool:
    """Whether op ``name`` is of the copy/cast/cat family (:func:`family_of`)."""
    return getattr(family_of(name), "name", "") == "copy/cast/cat"


def pairwise(table: OpTable | None) -> bool:
    """Whether ``table`` holds all-pairs distances: a distance op (cdist, pdist, _euclidean_dist), or a selection over a
    square ``[..., N, N]`` input (a Gram matrix ``x @ x.T`` fed to topk)."""
    square = _shaped(table, r"topk|(?<!search)sort|kthvalue|median", r"\[\[(?:\d+, )*(\d+), \1\]")
    return bool(square) or any(_DISTANCE.search(op.name.lower()) for op in (table.ops if table is not None else ()))


def _shaped(table: OpTable | None, names: str, shape: str, inside: str | None = None) -> list[re.Match[str]]:
    """The matches of ``shape`` (a regex, from the first input on) in the shape signatures of ``table``'s ops named as
    ``names`` (a regex), most frequent first; of those inside op ``inside`` only (:attr:`OpStat.inside`) if given."""
    ops = [op for op in (table.ops if table is not None else ()) if inside is None or inside in dict(op.inside)]
    return [m for op in ops if re.search(names, op.name) for s in op.input_shapes if (m := re.match(shape, s))]


def low_intensity(name: str) -> bool:
    """Whether the op does O(1) FLOPs per byte by its family (False for ops of no family)."""
    return getattr(family_of(name), "low_intensity", False)


def family_actions(names: list[str], *, cpu: bool = False, table: OpTable | None = None) -> tuple[Clause, ...]:
    """The actions of ``names``' families (evidence from their op ``table``: :func:`pairwise`, :func:`relayout`, a sort
    for "topk, not a full sort"), each once in order, the first clause headed ``"fft (aten::_fft_r2c): <cause>: "``;
    a clause two share stands once; "slice once per step" only for views that slice. Copies mostly run inside one op
    (:func:`enclosing_op`) are that op's."""
    knn = pairwise(table)
    seen = [*names, *(op.name for op in table.ops)] if table is not None else names
    unsaid = [] if any(re.search(r"(?<!search)sort", n) for n in seen) else [_TOPK, _LARGEST]  # topk is what it runs
    unsaid += [] if any(re.search(r"::(?:slice|select|narrow|unbind|split|chunk)", n) for n in names) else [_SLICE]
    families = {name: family_of(name, knn) for name in names}
    groups = grouped((name for name in names if families[name] is not None), families.get)
    parts: list[Clause] = []
    for family, ops in groups.items():
        first, *rest = [c for c in (family.cpu_action if cpu else family.action) if c not in unsaid]
        cause = (family.cpu_cause or family.cause) if cpu else family.cause
        if family.name == "copy/cast/cat" and table is not None and (inside := enclosing_op(table, ops)):
            outer = inside[0]  # its copies, not the model's casts; the model's own cats still told
            cause = f"most of their time runs inside {outer}"
            contracts = ", the dims it contracts" if family_of(outer) is not None and not low_intensity(outer) else ""
            rest = [first, *rest] if any(categorize(n) == "concat/index/gather/scatter" for n in ops) else []
            inner = {op.name.split("::")[-1] for op in table.ops if outer in dict(op.inside)}
            changed = inner & {"clone", "contiguous", "_to_copy"}  # an operand's layout or dtype made inside it
            said = f" (its operands' layout and dtype{contracts})" if changed else ""  # else the table does not say
            first = Clause(f"change how {outer} is called{said}")
            if not changed and (bias := _shaped(table, r"(?:^|::)expand$", r"\[(\[\d+\])", inside=outer)):
                cause += f", a 1-D operand ({bias[0][1]}: a bias) expanded inside it, broadcast into its output"
                first = Clause("no change of its operands' layout or dtype removes these copies: they are its own")
        rest += [_NHWC] if family.name == "copy/cast/cat" and relayout(table) else []
        head = f"{family.name} ({', '.join(ops[:3])}): {cause}: "
        parts += [replace(first, text=head + first.text), *(c for c in rest if c not in parts)]
    return tuple(parts)


#: Share of the copies' self CPU time one enclosing op must hold to be named their source (a majority).
ENCLOSING_MAJORITY = 0.5


def held_inside(table: OpTable, names: list[str] | None = None) -> dict[str, float]:
    """``{op: self CPU us of the ops that ran inside it}`` (of ``names``, when given; :attr:`OpStat.inside`)."""
    held: dict[str, float] = {}
    for op in table.ops:
        for outer, share in op.inside if names is None or op.name in names else ():
            held[outer] = held.get(outer, 0.0) + share * op.self_cpu_us
    return held


def enclosing_op(table: OpTable, names: list[str]) -> tuple[str, float] | None:
    """The op holding :data:`ENCLOSING_MAJORITY` of ``names``' self CPU time in copies (a composite's own views and
    elementwise ops are no call to change: fusing them is), with that share; else None. Copies so held are that op's:
    :func:`family_actions` tells to change how it is called, not to cast once or preallocate for torch.cat."""
    copies = [n for n in names if is_copy(n)]
    held, total = held_inside(table, copies), sum(op.self_cpu_us for op in table.ops if op.name in names)
    if total <= 0 or not held:
        return None
    outer, us = max(held.items(), key=lambda kv: kv[1])
    return (outer, us / total) if us / total >= ENCLOSING_MAJORITY else None


def relayout(table: OpTable | None) -> bool:
    """Whether ``table`` shows copies channels_last may spare: a permute of a 4-D tensor (NCHW <-> NHWC) and copies
    (copy_, clone, contiguous) of 4-D or larger ones."""
    permuted = _shaped(table, r"permute$", r"\[\[(?:\d+, ){3}\d+\]")
    return bool(permuted and _shaped(table, r"copy_|clone|contiguous", r"\[\[(?:\d+, ){3,}"))


@dataclass(frozen=True)
class DeviceWords:
    """One device's phrases: ``unit`` (``kernel``/``op call``), ``slow_path``, ``allocator``, ``half_fft``, ``offload``."""

    unit: str
    slow_path: str
    allocator: str
    half_fft: str
    offload: str


_CUDA = DeviceWords(
    "kernel",
    "extra kernel launches, a cache the larger tensors overflow, non-coalesced access",
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
    "cuFFT cannot run them in half precision",
    "precompute and cache it, run it on the GPU, or overlap it with the previous step",
)
_CPU = DeviceWords(
    "op call",
    "a cache level the larger tensors overflow, strided access, more page faults per step",
    "glibc's MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_ (or preallocated buffers)",
    "half-precision FFTs need power-of-2 sizes",
    "precompute and cache it, or overlap it with the previous step in another thread",
)


def words(device: str | None) -> DeviceWords:
    """The words for ``device`` (``"cpu"``, ``"cuda:1"``...); anything not a CPU (or None) gets the GPU's."""
    return _CPU if device == "cpu" else _CUDA
