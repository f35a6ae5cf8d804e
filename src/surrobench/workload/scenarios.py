"""Small workloads that each plant one bottleneck for the diagnosis (``scenario:NAME``; the bare size N sets the
main dimension); not physics surrogates, so not in ``surrobench models``.
"""

from __future__ import annotations

import torch
from torch import nn

from surrobench.errors import UsageError
from surrobench.workload.spec import ShapeSpec
from surrobench.workload.zoo._common import grid_points, grid_shape, randn
from surrobench.workload.zoo.base import ModelInfo, Surrogate

PREFIX = "scenario:"


class SyncInForward(nn.Module):
    """3x3 convolutions on ``(B, 64, N, N)``, each followed by a data-dependent rescale read with ``.item()``:
    one host-device synchronization per layer inside forward."""

    def __init__(self, width: int = 64, depth: int = 8) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, width, 3, padding=1)
        self.layers = nn.ModuleList(nn.Conv2d(width, width, 3, padding=1) for _ in range(depth))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        for layer in self.layers:
            x = torch.relu(layer(x))
            peak = x.abs().max().item()  # the planted sync: the host waits for the GPU
            if peak > 1.0:
                x = x / peak
        return x


class TinyMLP(nn.Sequential):
    """A 64-wide, 12-layer GELU MLP: at batch 1 every kernel lasts a couple of µs."""

    def __init__(self, width: int = 64, depth: int = 12) -> None:
        super().__init__(*[layer for _ in range(depth) for layer in (nn.Linear(width, width), nn.GELU())])


class GroupNormStack(nn.Module):
    """A 1x1 projection to 128 channels, then GroupNorm + SiLU blocks on the full grid: normalization and
    activation dominate, each a few FLOPs per byte."""

    def __init__(self, width: int = 128, depth: int = 4) -> None:
        super().__init__()
        self.proj = nn.Conv2d(3, width, 1)
        self.blocks = nn.Sequential(*[nn.Sequential(nn.GroupNorm(32, width), nn.SiLU()) for _ in range(depth)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.blocks(self.proj(x))


class PageableInput(nn.Module):
    """Receives its input in pageable host memory and copies it to the device every call, then a light
    1x1 convolution: the copy is inside the measured step."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 1)

    def forward(self, x_host: torch.Tensor) -> torch.Tensor:
        return self.conv(x_host.to(self.conv.weight.device))


class NeedlessStreamWait(nn.Module):
    """Two independent convolution branches on two CUDA streams, the second made to wait for the first's
    event before it starts: they run one after the other although nothing flows between them."""

    def __init__(self, width: int = 64, depth: int = 4) -> None:
        super().__init__()
        self.a = nn.Sequential(*[nn.Conv2d(3 if i == 0 else width, width, 3, padding=1) for i in range(depth)])
        self.b = nn.Sequential(*[nn.Conv2d(3 if i == 0 else width, width, 3, padding=1) for i in range(depth)])
        self._streams: tuple | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not x.is_cuda:
            return self.a(x) + self.b(x)
        if self._streams is None:
            self._streams = (torch.cuda.Stream(), torch.cuda.Stream())
        main, (s1, s2) = torch.cuda.current_stream(), self._streams
        s1.wait_stream(main)
        s2.wait_stream(main)
        with torch.cuda.stream(s1):
            a = self.a(x)
        s2.wait_event(s1.record_event())  # the planted needless dependency
        with torch.cuda.stream(s2):
            b = self.b(x)
        main.wait_stream(s1)
        main.wait_stream(s2)
        return a + b


class LargeGemm(nn.Sequential):
    """Four 4096x4096 bf16 linear layers on ``(B, N, 4096)`` tokens, weights stored in bf16 (no casts
    per call): tensor-core GEMMs, the healthy compute-bound control."""

    def __init__(self, width: int = 4096, depth: int = 4) -> None:
        super().__init__(*[nn.Linear(width, width, bias=False) for _ in range(depth)])
        self.to(torch.bfloat16)


def _grid(name: str):
    return lambda batch, shape: grid_shape(PREFIX + name, batch, shape, channels=3)


def _bare(name: str, shape: ShapeSpec) -> int:
    if shape.full is not None:
        raise UsageError(f"{PREFIX}{name}: give a bare size N, not a full shape")
    return shape.size


class ScenarioSurrogate(Surrogate):
    """One scenario: its module factory, ``dims(batch, shape) -> input shape``, dtype, and whether the input stays
    in pageable host memory."""

    def __init__(
        self,
        name: str,
        factory,
        layout: str,
        default_size: int,
        dims,
        *,
        dtype: torch.dtype = torch.float32,
        host_input: bool = False,
    ) -> None:
        self.info = ModelInfo(
            name=PREFIX + name,
            paper="surrobench scenario (planted bottleneck)",
            layout=layout,
            point_kind="grid points",
            default_size=default_size,
        )
        self._factory, self._dims, self._dtype, self._host = factory, dims, dtype, host_input

    def build(self) -> nn.Module:
        return self._factory()

    def example_inputs(
        self, batch: int, shape: ShapeSpec, *, generator: torch.Generator, device: torch.device
    ) -> tuple[torch.Tensor, ...]:
        """One input (a pageable CPU tensor for a host-input scenario); raises UsageError for a shape that does not
        fit."""
        x = randn(self._dims(batch, shape), generator, device, dtype=self._dtype)
        return (x.cpu(),) if self._host else (x,)

    def points_per_sample(self, inputs: tuple[torch.Tensor, ...]) -> int:
        x = inputs[0]
        return grid_points(x) if x.dim() == 4 else (x.shape[1] if x.dim() == 3 else 1)


WIDE = 4096
SCENARIO_MODELS: dict[str, ScenarioSurrogate] = {
    s.info.name: s
    for s in (
        ScenarioSurrogate("sync-in-forward", SyncInForward, "x: (B, 3, N, N)", 128, _grid("sync-in-forward")),
        ScenarioSurrogate("tiny-mlp", TinyMLP, "x: (B, 64); N ignored", 64, lambda b, s: (b, 64)),
        ScenarioSurrogate("groupnorm-large", GroupNormStack, "x: (B, 3, N, N)", 512, _grid("groupnorm-large")),
        ScenarioSurrogate(
            "pageable-h2d",
            PageableInput,
            "x: (B, 3, N, N) in pageable host memory",
            1024,
            _grid("pageable-h2d"),
            host_input=True,
        ),
        ScenarioSurrogate("stream-wait", NeedlessStreamWait, "x: (B, 3, N, N)", 128, _grid("stream-wait")),
        ScenarioSurrogate(
            "gemm-bf16",
            LargeGemm,
            "x: (B, N, 4096) bf16 tokens",
            4096,
            lambda b, s: (b, _bare("gemm-bf16", s), WIDE),
            dtype=torch.bfloat16,
        ),
    )
}


def get_scenario_model(spec: str) -> Surrogate:
    """The scenario surrogate named ``scenario:NAME``; raises UsageError listing the known ones."""
    if spec not in SCENARIO_MODELS:
        raise UsageError(f"unknown scenario model {spec!r}; known: {', '.join(SCENARIO_MODELS)}")
    return SCENARIO_MODELS[spec]
