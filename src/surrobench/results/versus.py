"""Versus records read back and compared (torch-free, so ``compare`` starts without torch): :func:`load_versus`,
:func:`is_versus_file`, :func:`compare_versus`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from surrobench.errors import UsageError
from surrobench.records import schemas
from surrobench.records.versus import MATCHED, SurrogateResult, VersusRecord


def load_versus(path: str | Path) -> VersusRecord:
    """A ``surrobench/versus-v1`` file (``versus --json``) read back.

    Raises:
        UsageError: unreadable, not JSON, or another document.
    """
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"versus file {str(path)!r}: cannot read it: {type(exc).__name__}") from None
    return VersusRecord.from_json(data)


def is_versus_file(ref: object) -> bool:
    """Whether ``ref`` is a path to a JSON file holding a ``surrobench/versus-v1`` document."""
    if not isinstance(ref, (str, Path)) or not str(ref).endswith(".json") or not Path(ref).is_file():
        return False
    try:
        return json.loads(Path(ref).read_text()).get("schema") == schemas.VERSUS
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError):
        return False


#: A comparison's verdict on the matched-error speedup: the two bootstrap intervals apart, or overlapping.
HIGHER, LOWER, INCONCLUSIVE, UNMATCHED = "higher", "lower", "inconclusive", "not_matched"


@dataclass(frozen=True)
class VersusComparison:
    """Two versus records compared setting by setting: ``rows``, one dict per surrogate label in both (records of
    one setting each pair those two) with each side's error, matched-error speedup and interval, and the verdict:
    :data:`HIGHER` / :data:`LOWER` when NEW's interval lies wholly above / below BASE's, :data:`INCONCLUSIVE` when
    they overlap, :data:`UNMATCHED` when either side's error lies past its ladder."""

    base: VersusRecord
    new: VersusRecord
    rows: tuple[dict, ...]

    def to_json(self) -> dict:
        return {"schema": schemas.COMPARE_VERSUS, "rows": [dict(r) for r in self.rows]}


def _verdict(base: SurrogateResult, new: SurrogateResult) -> str:
    if base.interval.low is None or new.interval.low is None or {base.match.status, new.match.status} != {MATCHED}:
        return UNMATCHED
    if new.interval.low > base.interval.high:
        return HIGHER
    if new.interval.high < base.interval.low:
        return LOWER
    return INCONCLUSIVE


def compare_versus(base: VersusRecord | str | Path, new: VersusRecord | str | Path) -> VersusComparison:
    """Compare two versus records (or ``versus --json`` files) at equal accuracy, setting by setting.

    Raises:
        UsageError: a file that is not a versus document; no surrogate setting in common.
    """
    base = base if isinstance(base, VersusRecord) else load_versus(base)
    new = new if isinstance(new, VersusRecord) else load_versus(new)
    pairs = [(b, n) for b in base.surrogates for n in new.surrogates if b.label == n.label]
    if not pairs and len(base.surrogates) == len(new.surrogates) == 1:
        pairs = [(base.surrogates[0], new.surrogates[0])]
    if not pairs:
        raise UsageError("the two versus records have no surrogate setting in common (compare labels with one each)")
    rows = tuple(
        {
            "label": n.label if b.label == n.label else f"{b.label} -> {n.label}",
            "base_error": b.accuracy.error,
            "new_error": n.accuracy.error,
            "base_speedup": b.match.speedup,
            "new_speedup": n.match.speedup,
            "base_interval": [b.interval.low, b.interval.high],
            "new_interval": [n.interval.low, n.interval.high],
            "verdict": _verdict(b, n),
        }
        for b, n in pairs
    )
    return VersusComparison(base, new, rows)
