"""surrobench: benchmark, profile and diagnose the inference of physics surrogate models."""

__version__ = "0.1.0"
