"""surrobench: benchmark, profile and diagnose the inference of physics surrogate models."""

from surrobench.version import __version__

__all__ = ["__version__"]
