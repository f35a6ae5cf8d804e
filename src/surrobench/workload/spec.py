"""Parsing of the sweep specification (docs/design.md, "Interfaces"): comma-separated lists; a bare size ``N`` is
the model family's layout at N, a full shape ``1x3x128x128`` is batch first (its batch replaced by each batch).
"""

from __future__ import annotations

from dataclasses import dataclass

from surrobench.errors import UsageError
from surrobench.records import schemas
from surrobench.records.vocab import COMPILE_MODES, MODES, PRECISIONS


@dataclass(frozen=True)
class ShapeSpec(schemas.Plain):
    """One rung of the shape ladder: exactly one of ``size`` (a bare size N, read by the model family) and
    ``full`` (a complete shape, batch first)."""

    size: int | None = None
    full: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if (self.size is None) == (self.full is None):
            raise ValueError("ShapeSpec needs exactly one of size and full")

    def label(self) -> str:
        """Text as the user wrote it: ``"256"`` or ``"1x3x256x256"``."""
        return str(self.size) if self.size is not None else "x".join(map(str, self.full))


def _split(text: str, parameter: str) -> list[str]:
    items = [t.strip() for t in text.split(",")]
    if not text.strip() or any(not t for t in items):
        raise UsageError.bad(parameter, f"{text!r}: expected a comma-separated list with no empty entries")
    return items


#: The largest size torch takes for one dimension: sizes are int64 (``torch.Size`` holds C++ ``int64_t``).
MAX_DIM = 2**63 - 1


def _positive_int(token: str, parameter: str, whole: str) -> int:
    try:
        value = int(token)
    except ValueError:
        what = f"{token!r} is not an integer" if token.strip() else "a dimension is empty (sizes join with 'x': 64x64)"
        raise UsageError.bad(parameter, f"{whole!r}: {what}") from None
    if value <= 0:
        raise UsageError.bad(parameter, f"{whole!r}: {value} must be positive")
    if value > MAX_DIM:
        raise UsageError.bad(parameter, f"{whole!r}: {value} is beyond any tensor size (at most 2**63 - 1)")
    return value


def _distinct(values: list, parameter: str, whole: str, why: str) -> list:
    """``values`` as parsed from ``whole``. Raises UsageError naming the first one given twice, and ``why``."""
    twice = next((v for i, v in enumerate(values) if v in values[:i]), None)
    if twice is not None:
        shown = twice.label() if isinstance(twice, ShapeSpec) else twice
        raise UsageError.bad(parameter, f"{whole!r}: {shown} is given twice ({why})")
    return values


def parse_shapes(text: str) -> list[ShapeSpec]:
    """Parse ``"128,256"`` or ``"1x3x128x128,1x3x256x256"``, order kept.

    Raises:
        UsageError: empty entries, non-integers, dimensions <= 0 or beyond :data:`MAX_DIM`, a shape given twice.
    """
    specs = []
    for token in _split(text, "shapes"):
        if "x" in token.lower():
            dims = tuple(_positive_int(d, "shapes", text) for d in token.lower().split("x"))
            if len(dims) < 2:
                raise UsageError.bad(
                    "shapes", f"{text!r}: full shape {token!r} needs a batch and at least one more dim"
                )
            specs.append(ShapeSpec(full=dims))
        else:
            specs.append(ShapeSpec(size=_positive_int(token, "shapes", text)))
    hint = "a bare size N is the model's layout at N ((B,3,N,N) for a grid); a full shape is batch first: 1x3x64x64"
    return _distinct(specs, "shapes", text, f"a comma separates the ladder's shapes; {hint}")


def parse_batches(text: str) -> list[int]:
    """Parse ``--batch``: ``"1,2,4,8"``, order kept. Raises UsageError for non-positive or non-integer entries,
    entries beyond :data:`MAX_DIM` and one given twice."""
    batches = [_positive_int(t, "batches", text) for t in _split(text, "batches")]
    return _distinct(batches, "batches", text, "a comma separates the batch sizes")


def parse_devices(text: str) -> list[int]:
    """Parse distinct GPU indices ``"0,1,3"``; raises UsageError for empty, negative, repeated or non-integers."""
    devices = []
    for token in _split(text, "devices"):
        if not token.isdigit():
            raise UsageError.bad("devices", f"{text!r}: {token!r} is not a GPU index (0, 1, ...)")
        devices.append(int(token))
    return _distinct(devices, "devices", text, "one process per GPU")


def _parse_choice(text: str, parameter: str, allowed: tuple[str, ...]) -> list[str]:
    values = [t.lower() for t in _split(text, parameter)]
    for v in values:
        if v not in allowed:
            raise UsageError.bad(parameter, f"{text!r}: unknown {v!r}; choose from {', '.join(allowed)}")
    return list(dict.fromkeys(values))


def parse_precisions(text: str) -> list[str]:
    """Parse ``--precision``: a subset of fp32, tf32, fp16, bf16 (duplicates dropped, order kept)."""
    return _parse_choice(text, "precisions", PRECISIONS)


def parse_compile_mode(text: str | None) -> str | None:
    """One of :data:`COMPILE_MODES` (None and ``default`` give None); raises UsageError for an unknown mode."""
    if text is None:
        return None
    value = text.strip().lower()
    if value not in COMPILE_MODES:
        raise UsageError.bad("compile_mode", f"{text!r}: choose from {', '.join(COMPILE_MODES)}")
    return None if value == "default" else value


def parse_modes(text: str) -> list[str]:
    """Parse ``--mode``: a subset of eager, compile, cudagraph (duplicates dropped, order kept)."""
    return _parse_choice(text, "modes", MODES)
