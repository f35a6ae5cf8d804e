"""One benchmark config and the numeric settings it pins down (precision, TF32, cuDNN autotuning)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from surrobench.errors import UsageError
from surrobench.records.config import EXEC_SETTINGS, ExecSettings, mode_text
from surrobench.records.stats import MIN_SAMPLES_FOR_P95
from surrobench.workload.spec import ShapeSpec

#: The source text's minimums (docs/sources.md, method §1): at least 10 warm-up and 50 timed iterations.
MIN_WARMUP = 10
MIN_ITERS = 50
#: The largest count any integer setting takes (a signed 32-bit int; SQLite stores at most a 64-bit INTEGER).
MAX_COUNT = 2**31 - 1
#: The default: at least :data:`MIN_ITERS` and the :data:`~surrobench.records.stats.MIN_SAMPLES_FOR_P95` samples
#: a trustworthy P95 needs.
DEFAULT_ITERS = max(MIN_ITERS, MIN_SAMPLES_FOR_P95)


def low_iterations_note(warmup: int, iters: int) -> str | None:
    """A warning when ``warmup`` or ``iters`` is under the method's minimums (:data:`MIN_WARMUP`,
    :data:`MIN_ITERS`); None when both are met, or a value is invalid (under 0 warm-up or 1 timed: its error says so)."""
    if warmup < 0 or iters < 1:
        return None
    low = [f"warmup {warmup} (< {MIN_WARMUP})"] * (warmup < MIN_WARMUP)  # the library's words and the flags' names
    low += [f"iters {iters} (< {MIN_ITERS})"] * (iters < MIN_ITERS)
    if not low:
        return None
    return (
        f"{' and '.join(low)}: under the minimum the benchmarking method asks for ({MIN_WARMUP} warm-up, "
        f"{MIN_ITERS} timed iterations); the median and P95 will be less reliable"
    )


def check_ints(**options: object) -> None:
    """Raise :class:`UsageError` naming an integer option given as anything but an ``int``; None passes."""
    for name, value in options.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise UsageError.bad(name, f"{value!r}: must be an int, not {type(value).__name__}")


def check_bools(**options: object) -> None:
    """Raise :class:`UsageError` naming a boolean option given as anything but a ``bool``."""
    for name, value in options.items():
        if not isinstance(value, bool):
            raise UsageError.bad(name, f"{value!r}: must be True or False, not {type(value).__name__}")


def check_iterations(*, warmup: int, iters: int) -> None:
    """Raise :class:`UsageError` unless ``iters`` >= 1 and ``warmup`` >= 0 are ints up to :data:`MAX_COUNT`."""
    check_ints(warmup=warmup, iters=iters)
    if iters < 1:
        raise UsageError.bad("iters", f"{iters}: need at least 1 timed iteration (the method asks for >= {MIN_ITERS})")
    if warmup < 0:
        raise UsageError.bad("warmup", f"{warmup}: must be >= 0")
    for name, value in (("warmup", warmup), ("iters", iters)):
        if value > MAX_COUNT:
            raise UsageError.bad(name, f"{value}: at most {MAX_COUNT}")


#: Precisions that run under ``torch.autocast``, by the name of their torch dtype.
_AUTOCAST_DTYPES = {"fp16": "float16", "bf16": "bfloat16"}


@dataclass(frozen=True)
class ExecConfig(ExecSettings):
    """One measured config: ``precision`` ``fp32`` (TF32 off), ``tf32``, ``fp16``/``bf16`` (autocast, TF32 off;
    docs/sources.md, method §1); ``mode`` ``eager``, ``compile``, ``cudagraph``; ``warmup`` untimed and ``iters``
    timed calls after the cold start; ``seed`` of weights and inputs; ``input_sets`` rotated; and the
    keyword-only :class:`~surrobench.records.config.ExecSettings`."""

    model: str
    shape: ShapeSpec
    batch: int
    precision: str
    device: str
    mode: str
    warmup: int
    iters: int
    cudnn_benchmark: bool
    seed: int
    input_sets: int
    trust_pickle: bool = False

    def label(self) -> str:
        """``fno2d 128 b4 fp16 eager``, a recipe's settings after the mode."""
        mode = mode_text(self.mode, self.changed())
        return f"{self.model} {self.shape.label()} b{self.batch} {self.precision} {mode}"


def tf32_enabled(precision: str) -> bool:
    """TF32 is on for ``tf32`` only, so that ``fp32`` means IEEE fp32 matmuls and convolutions (PyTorch
    docs, "TensorFloat-32 (TF32) on Ampere (and later) devices"); half precisions run with it off."""
    return precision == "tf32"


@contextlib.contextmanager
def numeric_settings(precision: str, cudnn_benchmark: bool):
    """Pin TF32 (:func:`tf32_enabled`) and cuDNN autotuning for the block."""
    import torch

    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32, torch.backends.cudnn.benchmark)
    tf32 = tf32_enabled(precision)
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = cudnn_benchmark
    try:
        yield
    finally:
        (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32, torch.backends.cudnn.benchmark) = saved


def autocast_context(precision: str, device: str, *, cache_enabled: bool = True) -> contextlib.AbstractContextManager:
    """``torch.autocast`` for fp16/bf16, a null context for fp32/tf32."""
    dtype = _AUTOCAST_DTYPES.get(precision)
    if dtype is None:
        return contextlib.nullcontext()
    import torch

    return torch.autocast(device_type=device, dtype=getattr(torch, dtype), cache_enabled=cache_enabled)


@contextlib.contextmanager
def execution_settings(cfg: ExecConfig, grad_mode: str = "inference_mode"):
    """Every process-wide setting of one config, restored afterwards: TF32 and cuDNN autotuning
    (:func:`numeric_settings`), the intra-op thread count (``torch.set_num_threads``), the fp32 matmul
    precision (``torch.set_float32_matmul_precision``) and ``grad_mode``, the torch context of that name:
    ``inference_mode``, or ``no_grad`` for a forward that takes gradients (``surrobench.records.run.GRAD_MODE_KEY``)."""
    import torch

    saved_threads, saved_matmul = torch.get_num_threads(), torch.get_float32_matmul_precision()
    if cfg.threads is not None:
        torch.set_num_threads(cfg.threads)
    try:
        with numeric_settings(cfg.precision, cfg.cudnn_benchmark), getattr(torch, grad_mode)():
            if cfg.matmul_precision is not None:  # after the TF32 switches, which it would otherwise override
                torch.set_float32_matmul_precision(cfg.matmul_precision)
            yield
    finally:
        torch.set_num_threads(saved_threads)
        torch.set_float32_matmul_precision(saved_matmul)


#: The fields of :class:`ExecConfig` that every config of a request takes from the request, under the same names.
REQUEST_FIELDS = ("device", "warmup", "iters", "cudnn_benchmark", "seed", *EXEC_SETTINGS)


def request_fields(request) -> dict:
    """``{name: request.name}`` for :data:`REQUEST_FIELDS`."""
    return {name: getattr(request, name) for name in REQUEST_FIELDS}
