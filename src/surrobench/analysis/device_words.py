"""The words a finding uses on a GPU and on a CPU (:func:`words`); :func:`gpu_words` finds GPU terms in CPU findings."""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Terms that belong to a GPU (units, libraries, access patterns, runtime): never in a CPU finding.
GPU_TERMS: tuple[str, ...] = ("kernel", "launch", "GPU", "CUDA", "cuDNN", "cuFFT", "cuBLAS", "tensor core")
GPU_TERMS += ("coalesced", "atomic", "occupancy", "warp", "SM", "stream", "device memory")
_GPU = re.compile(
    r"(?<![A-Za-z_])(kernels?|launch(?:es|ed|ing)?|gpus?|cuda|cudnn|cufft|cublas|tensor[- ]cores?|"
    r"(?:non-)?coalesced|atomic(?:s| adds?)?|occupancy|warps?|sms?|streams?|device memory)(?![A-Za-z_])",
    re.IGNORECASE,
)


def gpu_words(text: str) -> list[str]:
    """The GPU terms (:data:`GPU_TERMS`) in ``text``, as written, in order; empty when it has none."""
    return [m.group(0) for m in _GPU.finditer(text)]


@dataclass(frozen=True)
class DeviceWords:
    """One device's phrases: ``device``, ``unit`` (``kernel``/``op call``), ``slow_path``, ``allocator``, ``half_fft``, ``offload``."""

    device: str
    unit: str
    slow_path: str
    allocator: str
    half_fft: str
    offload: str


_CUDA = DeviceWords(
    "cuda",
    "kernel",
    "extra kernel launches, a cache the larger tensors overflow, non-coalesced access",
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
    "cuFFT cannot run them in half precision",
    "precompute and cache it, run it on the GPU, or overlap it with the previous step",
)
_CPU = DeviceWords(
    "cpu",
    "op call",
    "a cache level the larger tensors overflow, strided access, more page faults per step",
    "glibc's MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_ (or preallocated buffers)",
    "half-precision FFTs need power-of-2 sizes",
    "precompute and cache it, or overlap it with the previous step in another thread",
)


def words(device: str | None) -> DeviceWords:
    """The words for ``device`` (``"cpu"``, ``"cuda:1"``...); anything not a CPU (or None) gets the GPU's."""
    return _CPU if device == "cpu" else _CUDA
