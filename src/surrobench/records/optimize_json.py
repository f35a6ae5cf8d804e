"""An optimize document (:meth:`surrobench.results.optimize.OptimizeReport.to_json`; docs/design.md, "Optimize
JSON") checked key by key before it is read back: optimize-v3 and v2 must hold every key (v2 less a config's
``unconfirmed``, with :data:`~surrobench.records.vocab.OPTIMIZE_VERDICTS_V2`); v1 the keys v1 began with, a key
added during v1 checked where present. A key a reader does not know is left alone.
"""

from __future__ import annotations

from collections.abc import Callable

from surrobench.records import schemas
from surrobench.records.vocab import (
    DEVICES,
    FRESH_VERDICTS,
    MODES,
    OPTIMIZE_VERDICTS,
    OPTIMIZE_VERDICTS_V2,
    PRECISIONS,
)

Check = Callable[[object, str], None]


class OptimizeJsonError(ValueError):
    """A document that is not a valid optimize-v3 (or v2, v1) document; the message starts with the bad key's path
    (``configs[0].candidates[2].verdict: ...``)."""


def _fail(where: str, what: str) -> OptimizeJsonError:
    return OptimizeJsonError(f"{where}: {what}")


def _kind(expected: str, value: object, where: str) -> OptimizeJsonError:
    return _fail(where, f"expected {expected}, got {type(value).__name__}")


def _text(value: object, where: str) -> None:
    if not isinstance(value, str):
        raise _kind("a string", value, where)


def _number(value: object, where: str) -> None:
    """An int or a float (not a bool); infinite where an error was (a rel L2 of a non-finite output)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _kind("a number", value, where)


def _count(value: object, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _fail(where, f"expected a whole number >= 0, got {value!r}")


def _flag(value: object, where: str) -> None:
    if not isinstance(value, bool):
        raise _kind("true or false", value, where)


def _object(value: object, where: str) -> None:
    if not isinstance(value, dict):
        raise _kind("an object", value, where)


def _one_of(words: tuple[str, ...]) -> Check:
    def check(value: object, where: str) -> None:
        if value not in words:
            raise _fail(where, f"{value!r} is not one of {', '.join(words)}")

    return check


def _nullable(check: Check) -> Check:
    def nullable(value: object, where: str) -> None:
        if value is not None:
            check(value, where)

    return nullable


def _list(check: Check) -> Check:
    def each(value: object, where: str) -> None:
        if not isinstance(value, list):
            raise _kind("a list", value, where)
        for i, item in enumerate(value):
            check(item, f"{where}[{i}]")

    return each


def _fields(v1: dict[str, Check], later: dict[str, Check] | None = None) -> Callable[[object, str, bool], None]:
    """An object's check: the ``v1`` keys always required, the ``later`` ones required in v2 (``strict``) and
    checked in v1 where present."""
    later = later or {}

    def check(value: object, where: str, strict: bool) -> None:
        _object(value, where)
        missing = [k for k in (*v1, *(later if strict else ())) if k not in value]
        if missing:
            raise _fail(where or "top level", f"missing key(s) {', '.join(missing)}")
        for key, key_check in (*v1.items(), *later.items()):
            if key in value:
                key_check(value[key], f"{where}.{key}" if where else key)

    return check


def _nested(fields: Callable[[object, str, bool], None], strict: bool) -> Check:
    return lambda value, where: fields(value, where, strict)


def _pair(value: object, where: str) -> None:
    _list(_number)(value, where)
    if len(value) != 2:
        raise _fail(where, f"expected [low, high], got {len(value)} values")


_SPEEDUP = _fields({"median": _number, "ci95": _pair, "noise_floor": _number})
_TOP_OP = _fields({"name": _text, "share": _number})
_INPUT = _fields({"shape": _list(_count), "dtype": _nullable(_text)})
_NOT_TRIED = _fields({"name": _text, "reason": _text})


def _shapes(
    strict: bool, verdicts: tuple[str, ...], v3: bool = False
) -> dict[str, Callable[[object, str, bool], None]]:
    """The object checks of one version (``strict``: v2 or later, every key required; ``verdicts``: its candidate
    verdicts; ``v3``: a config's ``unconfirmed``, added in v3)."""
    speedup = _nullable(_nested(_SPEEDUP, strict))
    top_op = _nullable(_nested(_TOP_OP, strict))
    optional_number, optional_text = _nullable(_number), _nullable(_text)
    baseline = _fields(
        {"median_ms": optional_number, "p95_ms": optional_number, "peak_mem_bytes": optional_number}
        | {"top_op": top_op, "setup_s": optional_number}
    )
    candidate = _fields(
        {
            "name": _text,
            "verdict": _one_of(verdicts),
            "reason": _text,
            "rel_l2": optional_number,
            "max_abs": optional_number,
            "setup_s": optional_number,
            "gain": speedup,
            "accuracy": _nullable(_object),
            "break_even_calls": optional_number,
            "median_ms": optional_number,
            "p95_ms": optional_number,
            "peak_mem_bytes": optional_number,
            "top_op": top_op,
            "error": optional_text,
            "cause": optional_text,
            "time_s": _number,
            "stacked_on": optional_text,
        },
        {"baseline_ms": optional_number},
    )
    recipe = _fields(
        {"code": _list(_text), "run_command": optional_text},
        {
            "baseline_command": optional_text,
            "speedup": speedup,
            "windows": _count,
            "window_speedups": _list(_number),
            "process_windows": _count,
            "process_run_ids": _list(_text),
            "process_speedups": _list(_number),
        },
    )
    head_to_head = _fields({"first": _text, "rival": _text, "gain": speedup, "kept": _text, "error": optional_text})
    unconfirmed = _fields({"name": _text, "speedup": speedup, "windows": _count})
    fresh = _fields(
        {
            "pairs": _count,
            "verdict": _one_of(FRESH_VERDICTS),
            "reason": _text,
            "speedup": speedup,
            "baseline_ms": _list(_number),
            "recipe_ms": _list(_number),
            "run_ids": _list(_text),
            "error": optional_text,
            "elapsed_s": _number,
        }
    )

    def candidate_check(value: object, where: str) -> None:
        candidate(value, where, strict)
        if "speedup" in value:  # absent (or null) when the candidate was not timed
            speedup(value["speedup"], f"{where}.speedup")

    config = _fields(
        {
            "model": _text,
            "input_shape": _list(_count),
            "batch": _count,
            "precision": _one_of(PRECISIONS),
            "device": _one_of(DEVICES),
            "mode": _one_of(MODES),
            "error": optional_text,
            "baseline": _nested(baseline, strict),
            "candidates": _list(candidate_check),
            "recommended": _list(_text),
            "recipe": _nested(recipe, strict),
            "not_tried": _list(_nested(_NOT_TRIED, strict)),
            "notes": _list(_text),
            "elapsed_s": _number,
        },
        {
            "inputs": _list(_nested(_INPUT, strict)),
            "settings": _object,
            "label": _text,
            "head_to_head": _nullable(_nested(head_to_head, strict)),
            "cut_short": _flag,
            "fresh": _nullable(_nested(fresh, strict)),
            **({"unconfirmed": _nullable(_nested(unconfirmed, strict))} if v3 else {}),
        },
    )
    report = _fields(
        {
            "optimize_id": _text,
            "created": _text,
            "baseline_run_id": _text,
            "recipe_run_id": optional_text,
            "tolerance": _number,
            "budget_s": _number,
            "rounds": _count,
            "env": _object,
            "configs": _list(_nested(config, strict)),
        },
        {"verify": _count, "interrupted": _flag, "warnings": _list(_text)},
    )
    return {"config": config, "report": report}


_CHECKS = {
    schemas.OPTIMIZE: _shapes(True, OPTIMIZE_VERDICTS, v3=True),
    schemas.OPTIMIZE_V2: _shapes(True, OPTIMIZE_VERDICTS_V2),
    schemas.OPTIMIZE_V1: _shapes(False, OPTIMIZE_VERDICTS_V2),
}


def _version(schema: object, where: str) -> dict:
    if schema not in _CHECKS:
        older = f"{schemas.OPTIMIZE_V2!r}, {schemas.OPTIMIZE_V1!r}"
        raise _fail(where, f"{str(schema)[:80]!r} is not {schemas.OPTIMIZE!r} (or {older})")
    return _CHECKS[schema]


def check_optimize_json(doc: object) -> None:
    """Check a whole optimize document (module docstring).

    Raises:
        OptimizeJsonError: the first problem, as ``key.path: what is wrong``.
    """
    _object(doc, "top level")
    checks = _version(doc.get("schema"), "schema")
    checks["report"](doc, "", doc["schema"] != schemas.OPTIMIZE_V1)


def check_optimize_config(entry: object, schema: object, where: str = "config") -> None:
    """Check one config object of a document whose ``schema`` is given (the database indexes configs apart).

    Raises:
        OptimizeJsonError: an unknown schema, or the first problem of the config, as ``where.key: what is wrong``.
    """
    _version(schema, "schema")["config"](entry, where, schema != schemas.OPTIMIZE_V1)
