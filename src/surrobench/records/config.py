"""The config identity: what names one measured config across runs, tables and reports.

A config is one (model, executed input shape, batch, precision, device, mode); two results with the same
key measured the same thing, so runs are matched, stored and reported by it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

#: Execution settings outside the key (an optimize recipe may set them: ``run --channels-last
#: --compile-mode M --threads N``), kept in a result's ``extra`` when not the default, and named in its label.
EXEC_SETTINGS = ("channels_last", "compile_mode", "threads")


def mode_text(mode: str, settings: Mapping) -> str:
    """The mode with the settings of :data:`EXEC_SETTINGS` that ``settings`` sets, for a label:
    ``compile(reduce-overhead) channels_last threads=1``; the bare mode when none is set."""
    text = mode + (f"({settings['compile_mode']})" if settings.get("compile_mode") else "")
    if settings.get("channels_last"):
        text += " channels_last"
    if settings.get("threads") is not None:
        text += f" threads={settings['threads']}"
    return text


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
