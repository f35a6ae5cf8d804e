"""The config identity: what names one measured config across runs, tables and reports.

A config is one (model, executed input shape, batch, precision, device, mode); two results with the same
key measured the same thing, so runs are matched, stored and reported by it.
"""

from __future__ import annotations

from typing import NamedTuple


class ConfigKey(NamedTuple):
    """(model, input shape as executed with the batch, batch, precision, device, mode).

    A tuple, so it hashes and compares as one; ``input_shape`` is e.g. ``(2, 3, 64, 64)``.
    """

    model: str
    input_shape: tuple[int, ...]
    batch: int
    precision: str
    device: str
    mode: str

    def to_json(self) -> dict:
        """The keys that name a config in a JSON report (``input_shape`` as a list)."""
        return {**self._asdict(), "input_shape": list(self.input_shape)}
