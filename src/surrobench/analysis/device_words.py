"""The words a finding uses on a GPU and on a CPU (:func:`words`)."""

from __future__ import annotations

from dataclasses import dataclass


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
