"""The interface every reference surrogate (and every loaded user model) presents to the runner."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import torch
from torch import nn

from surrobench.workload.spec import ShapeSpec


@dataclass(frozen=True)
class ModelInfo:
    """What ``surrobench models`` prints for one model: its CLI ``name``, the ``paper`` it cites, its input
    ``layout`` in B and N (``"x: (B, 3, N, N)"``), what ``points_per_s`` counts (``point_kind``) and the
    ``default_size`` N without ``--shape``."""

    name: str
    paper: str
    layout: str
    point_kind: str
    default_size: int


class Surrogate(ABC):
    """A model family (``info``): builds the module and its inputs, on the target device from the given generator
    (the same seed, the same inputs: docs/design.md, "The pipeline")."""

    info: ModelInfo
    #: True for a distributed model whose factory takes the process group.
    takes_group: bool = False

    @abstractmethod
    def build(self) -> nn.Module:
        """A freshly initialised module in fp32 on the CPU (weights from the global torch seed)."""

    @abstractmethod
    def example_inputs(
        self, batch: int, shape: ShapeSpec, *, generator: torch.Generator, device: torch.device
    ) -> tuple[torch.Tensor, ...]:
        """Positional inputs of ``forward`` for one config, primary input first.

        Raises:
            UsageError: the shape does not fit the family's layout (e.g. a 3-D full shape for a 2-D model).
        """

    @abstractmethod
    def points_per_sample(self, inputs: tuple[torch.Tensor, ...]) -> int | None:
        """Grid points, nodes or collocation points per sample, for ``points_per_s``; None for a model whose
        layout declares no points (``points_per_s`` is then None, shown ``-``)."""
