"""Execution modes: ``step(i)`` runs the model on input set ``i % len(input_sets)`` eager, compiled or as a CUDA
graph; lazy work (compilation, capture) happens in the first call, the cold start.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable

import torch
from torch import nn

from surrobench.errors import UsageError
from surrobench.execution.config import autocast_context

Inputs = tuple[torch.Tensor, ...]
Step = Callable[[int], object]

#: Iterations on a side stream before capture, so lazy initialisation stays out of the graph (PyTorch CUDA-graphs docs).
CUDAGRAPH_WARMUP_ITERS = 3


def eager_step(model: nn.Module, input_sets: list[Inputs], precision: str, device: str) -> Step:
    """Plain eager call under the precision's autocast context."""

    def step(i: int):
        with autocast_context(precision, device):
            return model(*input_sets[i % len(input_sets)])

    return step


def compile_worker_threads() -> set[threading.Thread]:
    """The threads of TorchInductor's worker pools (``AsyncCompile.pool()``, ``torch/_inductor/async_compile.py``;
    ``PrecompileThreadPool``, ``torch/_inductor/autotune_process.py``): torch.compile's, not the model's."""
    threads: set[threading.Thread] = set()
    async_compile = sys.modules.get("torch._inductor.async_compile")
    if async_compile is not None and async_compile.AsyncCompile.pool.cache_info().currsize:
        threads.update(getattr(async_compile.AsyncCompile.pool(), "_threads", ()))
    autotune = sys.modules.get("torch._inductor.autotune_process")
    precompile = getattr(getattr(autotune, "PrecompileThreadPool", None), "_instance", None)
    threads.update(getattr(getattr(precompile, "_executor", None), "_threads", ()))
    return threads


def channels_last_inputs(input_sets: list[Inputs]) -> list[Inputs]:
    """The input sets with every 4-D tensor in ``torch.channels_last`` memory format."""
    return [
        tuple(t.contiguous(memory_format=torch.channels_last) if t.dim() == 4 else t for t in inputs)
        for inputs in input_sets
    ]


def cudagraph_step(model: nn.Module, input_sets: list[Inputs], precision: str, device: str) -> Step:
    """One CUDA graph per input set, replayed in turn, each in a private memory pool (a shared one would let a
    replay overwrite another's output), autocast's cast cache off in capture (PyTorch docs, CUDA graphs + AMP).
    Raises UsageError on a device other than CUDA."""
    if device != "cuda":  # a request refuses it first (sweep_request); here for a config built otherwise
        detail = "cudagraph needs {device} cuda (CUDA graphs are a CUDA feature)"
        raise UsageError.bad("modes", detail, others=("device",))
    graphs: list[torch.cuda.CUDAGraph] = []
    outputs: list[object] = []

    def forward(inputs: Inputs):
        with autocast_context(precision, device, cache_enabled=False):
            return model(*inputs)

    def capture() -> None:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(CUDAGRAPH_WARMUP_ITERS):
                forward(input_sets[0])
        torch.cuda.current_stream().wait_stream(side)
        for inputs in input_sets:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                outputs.append(forward(inputs))
            graphs.append(graph)

    def step(i: int):
        if not graphs:
            capture()
        k = i % len(graphs)
        graphs[k].replay()
        return outputs[k]

    return step
