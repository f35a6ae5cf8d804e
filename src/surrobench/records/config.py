"""The config identity: what names one measured config across runs, tables and reports.

A config is one (model, executed input shape, batch, precision, device, mode, every input's shape and dtype);
two results with the same key measured the same thing, so runs are matched, stored and reported by it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import NamedTuple

from surrobench.errors import UsageError
from surrobench.records import schemas

#: ``torch.set_float32_matmul_precision``'s choices (PyTorch docs, ``torch.set_float32_matmul_precision``).
MATMUL_PRECISIONS = ("highest", "high", "medium")


@dataclass(frozen=True, kw_only=True)
class ExecSettings(schemas.Plain):
    """The execution settings outside the config key, one record from the request through the config
    (:class:`~surrobench.execution.config.ExecConfig`) to the result's ``extra`` and the run-v3 ``settings``
    (:meth:`changed`); docs/design.md, "Execution settings", says what a new one needs.

    ``channels_last``: 4-D inputs and weights in NHWC memory format; ``compile_mode``: ``torch.compile``'s
    ``mode``; ``threads``: ``torch.set_num_threads``; ``matmul_precision``: ``torch.set_float32_matmul_precision``
    (:data:`MATMUL_PRECISIONS`); None keeps torch's default.

    Raises:
        UsageError: a ``matmul_precision`` outside :data:`MATMUL_PRECISIONS`.
    """

    channels_last: bool = False
    compile_mode: str | None = None
    threads: int | None = None
    matmul_precision: str | None = None

    def __post_init__(self) -> None:
        if self.matmul_precision not in (None, *MATMUL_PRECISIONS):
            raise UsageError.bad(
                "matmul_precision", f"{self.matmul_precision!r}: one of {', '.join(MATMUL_PRECISIONS)}"
            )

    def changed(self) -> dict:
        """The settings that differ from the defaults, ``{name: value}``: a plain run's record is unchanged."""
        return {k: getattr(self, k) for k in EXEC_SETTINGS if getattr(self, k) not in (None, False)}


#: The names of :class:`ExecSettings`, kept in a result's ``extra`` when not the default, and named in its label.
EXEC_SETTINGS = tuple(f.name for f in fields(ExecSettings))


def mode_text(mode: str, settings: Mapping) -> str:
    """The mode with the settings of :data:`EXEC_SETTINGS` that ``settings`` sets, for a label:
    ``compile(reduce-overhead) channels_last threads=1``; the bare mode when none is set."""
    text = mode + (f"({settings['compile_mode']})" if settings.get("compile_mode") else "")
    for name in EXEC_SETTINGS:
        if name != "compile_mode" and settings.get(name) not in (None, False):
            text += f" {name}" if settings[name] is True else f" {name}={settings[name]}"
    return text


#: ``compare``'s note where the two sides' :func:`mode_text` differ, BASE's then NEW's: it pairs configs, and serve
#: runs, whatever they ran with, so its tables hide them (``settings differ: BASE eager, NEW eager threads=1``).
SETTINGS_NOTE = "settings differ: BASE {}, NEW {}"


def same_settings(modes: tuple[str, str], sides: tuple[Mapping, Mapping], default_threads: tuple | None = None) -> bool:
    """Whether two sides' modes and execution settings (:data:`EXEC_SETTINGS`, ``cudnn_benchmark``) are the same, a
    setting left to its default (absent, None or False) being that default: off for a toggle, and for ``threads``,
    where a side sets it, the count torch ran with by default on the other (``default_threads``: each record's, None
    where it holds none; omitted, each side's ``torch_threads``): ``threads=2`` against a default of 2 is the same."""
    fill = any(s.get("threads") for s in sides)
    threads = default_threads or tuple(s.get("torch_threads") for s in sides)  # a config's extra holds its own
    a, b = (
        {k: s.get(k) or (t if fill and k == "threads" else None) for k in (*EXEC_SETTINGS, "cudnn_benchmark")}
        for s, t in zip(sides, threads)
    )
    return modes[0] == modes[1] and a == b


class InputSpec(NamedTuple):
    """One input tensor of a config as executed: ``shape`` with the batch where it has one, e.g.
    ``(2, 3, 64, 64)``, and ``dtype`` as torch names it without its prefix (``"float32"``); None for a record that
    kept its primary input's shape alone (run-v1 JSON, a database of schema 3 or older)."""

    shape: tuple[int, ...]
    dtype: str | None

    def to_json(self) -> dict:
        """``{"shape": [...], "dtype": "float32"}``, the run-v2 form."""
        return {"shape": list(self.shape), "dtype": self.dtype}

    @classmethod
    def from_json(cls, d: Mapping) -> "InputSpec":
        return cls(tuple(d["shape"]), d["dtype"])


#: The dtype an input is assumed to have unless its label says otherwise (docs/models.md, "Your model": the default
#: input is one fp32 tensor).
DEFAULT_INPUT_DTYPE = "float32"


def inputs_text(inputs: tuple[InputSpec, ...]) -> str:
    """Every input in one word for a label: ``2x3x64x64`` for one fp32 input, ``256x2,1x100`` for two, a dtype
    other than fp32 after its shape (``4096x3,2x24000:int64``); empty for no inputs."""
    return ",".join(
        "x".join(map(str, spec.shape)) + (f":{spec.dtype}" if spec.dtype not in (None, DEFAULT_INPUT_DTYPE) else "")
        for spec in inputs
    )


def inputs_json(inputs: tuple[InputSpec, ...]) -> list[dict]:
    """``inputs`` as the run-v2 list, ``[{"shape": [...], "dtype": "float32"}, ...]`` (also the list of an
    optimize-v2 or -v3 config and of compare-v2)."""
    return [spec.to_json() for spec in inputs]


def inputs_of(d: Mapping) -> tuple[InputSpec, ...]:
    """The inputs of a JSON config object (run-v2 result, optimize-v2 config): its ``inputs``; for a document
    that predates them (run-v1, optimize-v1), its primary ``input_shape`` alone, dtype None (none when no
    input was built)."""
    if "inputs" in d:
        return tuple(InputSpec.from_json(spec) for spec in d["inputs"])
    return (InputSpec(tuple(d["input_shape"]), None),) if d["input_shape"] else ()


class ConfigKey(NamedTuple):
    """(model, primary input shape as executed with the batch, e.g. ``(2, 3, 64, 64)``, batch, precision, device,
    mode, every input's :class:`InputSpec`, the primary one first: DeepONet-like ``(u(B, 100), y(N, 2))`` at two N
    are two keys)."""

    model: str
    input_shape: tuple[int, ...]
    batch: int
    precision: str
    device: str
    mode: str
    inputs: tuple[InputSpec, ...] = ()

    def to_json(self) -> dict:
        """The keys that name a config in a JSON report of schema v1 (profile-v1, perf-v1): ``input_shape`` as a
        list, without ``inputs`` (:meth:`identity_json` has them)."""
        fields = self._asdict()
        del fields["inputs"]
        return {**fields, "input_shape": list(self.input_shape)}

    def identity_json(self) -> dict:
        """:meth:`to_json` with ``inputs``, the run-v2 list (``[{"shape": [...], "dtype": ...}, ...]``): the whole
        identity, as compare-v2 names a config."""
        return {**self.to_json(), "inputs": inputs_json(self.inputs)}
