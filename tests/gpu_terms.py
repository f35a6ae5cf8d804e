"""GPU terms in a text: what a CPU finding must never use (docs/design.md, "CPU diagnoses in CPU terms")."""

from __future__ import annotations

import re

#: Terms that belong to a GPU (units, libraries, access patterns, runtime): never in a CPU finding.
GPU_TERMS: tuple[str, ...] = ("kernel", "launch", "GPU", "CUDA", "cuDNN", "cuFFT", "cuBLAS", "tensor core")
GPU_TERMS += ("coalesced", "atomic", "occupancy", "warp", "SM", "stream", "device memory", "host synchronization")
_GPU = re.compile(
    r"(?<![A-Za-z_])(kernels?|launch(?:es|ed|ing)?|gpus?|cuda|cudnn|cufft|cublas|tensor[- ]cores?|"
    r"(?:non-)?coalesced|atomic(?:s| adds?)?|occupancy|warps?|sms?|streams?|device memory|host synchronizations?)"
    r"(?![A-Za-z_])",
    re.IGNORECASE,
)


def gpu_words(text: str) -> list[str]:
    """The GPU terms (:data:`GPU_TERMS`) in ``text``, as written, in order; empty when it has none."""
    return [m.group(0) for m in _GPU.finditer(text)]
