"""FLOP formulas for surrogate ops that :mod:`torch.utils.flop_counter` does not count, passed as
``FlopCounterMode(custom_mapping=FLOP_FORMULAS)`` (raw formulas seeing the tensors). Unknown ops are ``None``,
never 0 (:func:`counted_ops`, :func:`flops_unknown_reason`). A multiply-add counts 2.

- FFT: ``5 N log2 N`` per complex transform, ``2.5 N log2 N`` per r2c/c2r (FFTW's count,
  http://www.fftw.org/speed/method.html); N the product of the transformed sizes; normalization not counted.
- Complex matmul family: torch's ``2 m n k`` times 4.
- Elementwise: 1 per real output; complex add/sub 2, mul 6, div 11; transcendentals unknown.
- Scatter/index-add: 1 per source element; gathers, copies, casts, concat, pad, fill, views: 0.
- Group/layer norm 7 per element (Wu and He, ECCV 2018, eq. 1-2); batch norm 4 (running stats) or 7.
- Sums and means: 1 per input element.
- cdist per coordinate of each pair: 3 (difference, square, sum), 2 as ATen's matmul form (Distance.cpp); topk/sort 0.
- Attention (matmuls only): SDPA ``4 B H L S E`` (as ``sdpa_flop_count``); ``_native_multi_head_attention``
  adds ``2 B L D 3D + 2 B L D D``; ``_transformer_encoder_layer_fwd`` adds ``2 B L D F`` twice."""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.flop_counter import FlopCounterMode, flop_registry

from surrobench.analysis.roofline import OpCost
from surrobench.records.ops import VIEWS, categorize

aten = torch.ops.aten

#: FLOPs per element of the normalizations (see the module docstring).
NORM_FLOPS_PER_ELEMENT = 7
BATCH_NORM_INFERENCE_FLOPS_PER_ELEMENT = 4
#: A complex multiply-add against a real one (8 / 2 real FLOPs).
COMPLEX_MATMUL_FACTOR = 4
#: FLOPs per output element of elementwise arithmetic: (real, complex).
_ELEMENTWISE = {
    "add": (1, 2),
    "sub": (1, 2),
    "rsub": (1, 2),
    "mul": (1, 6),
    "div": (1, 11),
    "neg": (1, 2),
    "abs": (1, None),
    "relu": (1, None),
    "clamp": (1, None),
    "clamp_min": (1, None),
    "maximum": (1, None),
    "minimum": (1, None),
}
_SCATTER_ADD = ("scatter_add", "scatter_add_", "index_add", "index_add_", "scatter_reduce", "scatter_reduce_")
_SCATTER_ADD += ("index_reduce", "index_reduce_")
_REDUCTIONS = ("sum", "mean")
_DATA_MOVEMENT = ("copy_", "_to_copy", "clone", "cat", "stack", "constant_pad_nd", "index_select", "gather", "index")
_DATA_MOVEMENT += ("embedding", "repeat", "roll", "flip", "fill_", "zero_", "zeros", "zeros_like", "ones", "empty")
_DATA_MOVEMENT += ("empty_like", "new_zeros", "new_empty", "view", "_unsafe_view", "reshape", "permute", "transpose")
_DATA_MOVEMENT += ("t", "unsqueeze", "squeeze", "slice", "select", "alias", "expand", "as_strided", "split")
_DATA_MOVEMENT += ("split_with_sizes", "unbind", "narrow", "view_as_real", "view_as_complex", "_reshape_alias")
_DATA_MOVEMENT += ("detach", "contiguous", "scatter", "scatter_", "masked_fill", "masked_fill_", "slice_scatter")
_DATA_MOVEMENT += ("select_scatter", "topk", "sort", "kthvalue")


def _raw(formula: Callable[..., int]) -> Callable[..., int]:
    """Mark ``formula`` as taking the op's raw arguments (tensors), as FlopCounterMode's custom_mapping reads it."""
    formula._get_raw = True  # type: ignore[attr-defined]
    return formula


def _tensors(value) -> list[torch.Tensor]:
    return [t for t in tree_flatten(value)[0] if isinstance(t, torch.Tensor)]


def fft_flops(points: int, transforms: int, real: bool) -> int:
    """``transforms`` FFTs of ``points`` each: ``5 N log2 N`` complex, half for real; 0 for one point."""
    if points <= 1:
        return 0
    per = 5.0 * points * math.log2(points)
    return int(round(transforms * (per / 2 if real else per)))


def _fft(real: bool, signal: str) -> Callable[..., int]:
    """Formula for ``_fft_r2c``/``_c2r``/``_c2c``: N from the real side's transformed dims."""

    def formula(x, dim, *args, out_val=None, **kwargs) -> int:
        t = x if signal == "input" else out_val
        points = math.prod(t.shape[d % t.dim()] for d in dim)
        return fft_flops(points, t.numel() // max(points, 1), real)

    return _raw(formula)


def _complex_matmul(op) -> Callable[..., int]:
    """torch's formula for ``op`` times :data:`COMPLEX_MATMUL_FACTOR` when any operand is complex."""
    base = flop_registry[op]

    def formula(*args, out_val=None, **kwargs) -> int:
        flops = base(*args, out_val=out_val, **kwargs)
        return flops * COMPLEX_MATMUL_FACTOR if any(t.is_complex() for t in _tensors(args)) else flops

    return _raw(formula)


def _elementwise(real: int, complex_: int | None) -> Callable[..., int]:
    def formula(*args, out_val=None, **kwargs) -> int:
        outs = _tensors(out_val)
        per = complex_ if any(t.is_complex() for t in outs + _tensors(args)) else real
        return (per or 0) * sum(t.numel() for t in outs)  # a complex abs/relu cannot occur (torch refuses it)

    return _raw(formula)


def _per_input_element(per: int) -> Callable[..., int]:
    """``per`` FLOPs per element of the op's first input."""

    def formula(*args, out_val=None, **kwargs) -> int:
        return per * args[0].numel()

    return _raw(formula)


def _scatter_add(*args, out_val=None, **kwargs) -> int:
    """One add per source element: ``(self, dim, index, src)`` (``source`` for index_add/index_reduce)."""
    src = args[3] if len(args) > 3 else kwargs.get("src", kwargs.get("source"))
    return src.numel()


def _index_put(*args, out_val=None, **kwargs) -> int:
    """``index_put(self, indices, values, accumulate)``: one add per value when accumulating, else a copy."""
    accumulate = args[3] if len(args) > 3 else kwargs.get("accumulate", False)
    values = args[2] if len(args) > 2 else kwargs["values"]
    return values.numel() if accumulate else 0


def _batch_norm(training_arg: int | None) -> Callable[..., int]:
    """Batch norm: 4 FLOPs per element with running statistics, 7 with batch statistics (``training``)."""

    def formula(*args, out_val=None, **kwargs) -> int:
        training = bool(args[training_arg]) if training_arg is not None and len(args) > training_arg else False
        return (NORM_FLOPS_PER_ELEMENT if training else BATCH_NORM_INFERENCE_FLOPS_PER_ELEMENT) * args[0].numel()

    return _raw(formula)


def _distance(per: int) -> Callable[..., int]:
    """``per`` FLOPs per coordinate of each pair of ``x1`` (B, P, M) and ``x2`` (B, R, M)."""
    return _raw(lambda x1, x2, *args, out_val=None, **kwargs: per * out_val.numel() * x1.shape[-1])


def attention_flops(batch: int, heads: int, queries: int, keys: int, head_dim: int) -> int:
    """The two matmuls of scaled dot-product attention, ``4 B H L S E`` (see the module docstring)."""
    return 4 * batch * heads * queries * keys * head_dim


def _sdpa_cpu(query, key, value, *args, out_val=None, **kwargs) -> int:
    """``_scaled_dot_product_flash_attention_for_cpu(query (B, H, L, E), key (B, H, S, E), value, ...)``."""
    b, h, n, e = query.shape
    return attention_flops(b, h, n, key.shape[-2], e)


def _native_mha(query, key, value, embed_dim, num_head, *args, out_val=None, **kwargs) -> int:
    """``_native_multi_head_attention(query (B, L, D) or (L, D), key, value, embed_dim, num_head, ...)`` as
    self-attention of ``query``: QKV and output projections and the attention."""
    b, n = (query.shape[0], query.shape[1]) if query.dim() == 3 else (1, query.shape[0])
    d, heads = int(embed_dim), int(num_head)
    projections = 2 * b * n * d * (3 * d + d)
    return projections + attention_flops(b, heads, n, n, d // heads)


def _encoder_layer(src, embed_dim, num_heads, *args, out_val=None, **kwargs) -> int:
    """``_transformer_encoder_layer_fwd(src (B, L, D), ..., ffn_weight_1 (F, D), ...)``: attention plus two FFN matmuls."""
    ffn_weight_1 = args[11] if len(args) > 11 else kwargs["ffn_weight_1"]
    return _native_mha(src, src, src, embed_dim, num_heads) + 2 * (2 * src.numel() * ffn_weight_1.shape[0])


#: Fused composites (transformer fast path, SDPA backends, fused MHA): unknown without a formula.
FUSED_COMPOSITES = re.compile(r"attention|_transformer_encoder_layer|multi_head|flash|fused|_addmm_activation")
#: Transcendental activations: no agreed FLOP count (module docstring).
_TRANSCENDENTAL = re.compile(r"gelu|silu|tanh|sigmoid|exp|log|erf|sin|cos|softplus|mish|pow|sqrt")


def flops_unknown_reason(name: str) -> str:
    """Why an op's FLOPs are unknown, a short fixed phrase (a structured field of the roofline op)."""
    lowered = name.lower()
    if FUSED_COMPOSITES.search(lowered):
        return "fused composite without a FLOP formula"
    if _TRANSCENDENTAL.search(lowered):
        return "transcendental activation: no agreed FLOP count"
    return "no FLOP formula for this op (torch.utils.flop_counter nor surrobench's table)"


def _build() -> dict:
    formulas: dict = {
        aten._fft_r2c: _fft(real=True, signal="input"),
        aten._fft_c2r: _fft(real=True, signal="output"),
        aten._fft_c2c: _fft(real=False, signal="input"),
        aten.native_group_norm: _per_input_element(NORM_FLOPS_PER_ELEMENT),
        aten.native_layer_norm: _per_input_element(NORM_FLOPS_PER_ELEMENT),
        aten._native_batch_norm_legit_no_training: _batch_norm(None),
        aten._native_batch_norm_legit: _batch_norm(5),
        aten.native_batch_norm: _batch_norm(5),
        aten.cudnn_batch_norm: _batch_norm(5),
        aten._cdist_forward: _distance(3),
        aten._euclidean_dist: _distance(2),
    }
    formulas.update({op: _complex_matmul(op) for op in (aten.mm, aten.bmm, aten.addmm, aten.baddbmm)})
    composites = {
        "_scaled_dot_product_flash_attention_for_cpu": _sdpa_cpu,
        "_native_multi_head_attention": _native_mha,
        "_transformer_encoder_layer_fwd": _encoder_layer,
    }
    formulas.update({getattr(aten, n): _raw(f) for n, f in composites.items() if hasattr(aten, n)})
    for name, per in _ELEMENTWISE.items():  # the op and its in-place form (add, add_)
        formulas.update({getattr(aten, n): _elementwise(*per) for n in (name, name + "_") if hasattr(aten, n)})
    formulas.update({getattr(aten, name): _raw(_scatter_add) for name in _SCATTER_ADD})
    formulas.update({aten.index_put: _raw(_index_put), aten.index_put_: _raw(_index_put)})
    formulas.update({getattr(aten, name): _per_input_element(1) for name in _REDUCTIONS})
    zero = _raw(lambda *args, out_val=None, **kwargs: 0)
    formulas.update({getattr(aten, name): zero for name in _DATA_MOVEMENT if hasattr(aten, name)})
    return formulas


#: ``{OpOverloadPacket: raw formula}``, the ``custom_mapping`` of surrobench's FLOP counter.
FLOP_FORMULAS: dict = _build()


def counted_ops(mapping: dict) -> frozenset[str]:
    """Names (``aten::bmm``) of the ops a FlopCounterMode with ``mapping`` counts: torch's registry and ours."""
    return frozenset(str(op).replace(".", "::", 1) for op in {**flop_registry, **mapping})


#: Gathers: they read the source rows they output, not the whole source.
_GATHERS = frozenset({"aten::index_select", "aten::gather", "aten::index", "aten::embedding"})


class _ShapeBytes(TorchDispatchMode):
    """Counts calls, bytes (tensor inputs and outputs, once each) and input dtypes per ATen op."""

    def __init__(self) -> None:
        super().__init__()
        self.costs: dict[str, OpCost] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func._schema.name
        cost = self.costs.setdefault(name, OpCost(name))
        cost.calls += 1
        if categorize(name) == VIEWS:  # a view moves no bytes: it must draw no time from the ops it sits beside
            return out
        ins, outs = _tensors((args, kwargs or {})), _tensors(out)
        nbytes = [t.numel() * t.element_size() for t in ins]
        out_bytes = sum(t.numel() * t.element_size() for t in outs)
        if name in _GATHERS and ins:  # the source (first input) read at most once per output element
            nbytes[0] = min(nbytes[0], out_bytes)
        cost.bytes += sum(nbytes) + out_bytes
        cost.dtypes.update(str(t.dtype).removeprefix("torch.") for t in ins if t.is_floating_point() or t.is_complex())
        return out


def count_op_costs(forward: Callable[[], object], module: torch.nn.Module | None = None) -> dict[str, OpCost]:
    """Run ``forward()`` once under the FLOP and byte counters; costs by op name, ``flops`` None if unknown. The
    ``module``'s parameters require no grad meanwhile (FlopCounterMode's module tracker fails on one a submodule
    takes under inference mode, ``self.lin(self.q)``)."""
    grads = [p.requires_grad_(False) for p in module.parameters() if p.requires_grad] if module is not None else []
    try:
        with _ShapeBytes() as shapes, FlopCounterMode(display=False, custom_mapping=FLOP_FORMULAS) as flops:
            forward()
    finally:
        for p in grads:
            p.requires_grad_(True)
    known = counted_ops(FLOP_FORMULAS)
    for name, cost in shapes.costs.items():  # every op with FLOPs counted is known: its reason stays None
        cost.flops, cost.flops_unknown = (0, None) if name in known else (None, flops_unknown_reason(name))
    for packet, count in flops.get_flop_counts().get("Global", {}).items():
        name = str(packet).replace(".", "::", 1)
        cost = shapes.costs.setdefault(name, OpCost(name))
        cost.flops = (cost.flops or 0) + int(count)
    return shapes.costs
