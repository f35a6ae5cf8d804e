"""Chrome-trace event slices into columns: msgspec typed decode, else orjson or the stdlib."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from operator import attrgetter, itemgetter
from typing import Any, ClassVar, Union

try:
    import orjson

    _loads = orjson.loads
    SYNTAX_ERRORS: tuple[type[Exception], ...] = (orjson.JSONDecodeError, ValueError, RecursionError)
except ImportError:  # the pure-Python path: same slicing, stdlib parser (docs/benchmarks)
    _loads = json.loads
    SYNTAX_ERRORS = (ValueError, RecursionError)
"""Exceptions a decoder raises on a slice that is not valid JSON (or a wrong cut)."""

FIELDS = ("ph", "cat", "name", "pid", "tid", "ts", "dur", "device", "stream", "correlation", "external_id", "bytes")
"""Fields a slice gives, None where absent; the last five from ``args``."""
_ARGS_KEY = {"device": "device", "stream": "stream", "correlation": "correlation", "external_id": "External id"}
_ARGS_KEY |= {"bytes": "bytes"}


class DictSlice:
    """A slice parsed as dicts (non-dict events and ``args`` empty); ``kinds``: ``(ph, cat)``; :meth:`take`: a field at rows."""

    def __init__(self, events: list) -> None:
        self.events = [e if type(e) is dict else {} for e in events]
        self.kinds = [(e.get("ph"), e.get("cat")) for e in self.events]

    def take(self, rows: list[int]) -> Callable[[str], list]:
        """``get(field)``: the values of ``field`` at ``rows`` (indices into the slice), as a list."""
        sel = [self.events[i] for i in rows]
        args = [a if type(a) is dict else {} for a in (e.get("args") for e in sel)]

        def get(field: str) -> list:
            key = _ARGS_KEY.get(field)
            return [a.get(key) for a in args] if key else [e.get(field) for e in sel]

        return get


try:
    import msgspec

    class _Args(msgspec.Struct, gc=False):
        device: Any = None
        stream: Any = None
        correlation: Any = None
        external_id: Any = msgspec.field(default=None, name="External id")
        bytes: Any = None

    class _Event(msgspec.Struct, gc=False, tag_field="ph", tag="X"):
        """A complete event: every field the loader reads."""

        ph: ClassVar[str] = "X"
        cat: Any = None
        name: Any = None
        pid: Any = None
        tid: Any = None
        ts: Any = None
        dur: Any = None
        args: _Args = msgspec.field(default_factory=_Args)

    # Every other phase of the Trace Event Format keeps its category only; another ``ph`` sends the slice to dicts.
    _OTHER_PHASES = "BEiICbneSTpFstfPNODMVvRc()"
    _OTHERS = tuple(
        msgspec.defstruct(f"_Phase{i}", [("cat", Any, None)], namespace={"ph": ph}, gc=False, tag_field="ph", tag=ph)
        for i, ph in enumerate(_OTHER_PHASES)
    )
    _typed = msgspec.json.Decoder(list[Union[(_Event, *_OTHERS)]])
    _GET = {f: attrgetter(f"args.{f}" if f in _ARGS_KEY else f) for f in FIELDS}
    _KIND = attrgetter("ph", "cat")

    class _StructSlice:
        """A slice decoded into :class:`_Event` (and category-only) structs; same interface as :class:`DictSlice`."""

        def __init__(self, events: list) -> None:
            self.events = events
            self.kinds = list(map(_KIND, events))

        def take(self, rows: list[int]):
            sel = itemgetter(*rows)(self.events) if len(rows) > 1 else [self.events[rows[0]]]
            return lambda field: list(map(_GET[field], sel))

    def decode_slice(data: bytes):
        """One slice, msgspec-typed; an odd ``args``, ``ph`` or non-object event sends it through the dict path."""
        try:
            return _StructSlice(_typed.decode(data))
        except msgspec.ValidationError:
            return DictSlice(_loads(data))
        except msgspec.DecodeError:  # a lone surrogate ("\\ud800") is valid JSON the stdlib accepts
            return DictSlice(json.loads(data))

except ImportError:  # no msgspec: dicts from orjson or the stdlib

    def decode_slice(data: bytes):
        """One slice (a JSON array of events) as dicts; record_shapes' integer lists dropped first (below)."""
        data = _SHAPE_ARGS.sub(b'"_": 0', data)
        try:
            return DictSlice(_loads(data))
        except SYNTAX_ERRORS:  # orjson refuses lone surrogates ("\\ud800"), valid JSON the stdlib accepts
            return DictSlice(json.loads(data))

    # record_shapes=True's "Input Dims"/"Input Strides" integer lists: a third of the bytes, unread; stripped outside
    # strings before parsing (docs/benchmarks/trace-analysis.md).
    _SHAPE_ARGS = re.compile(rb'"Input (?:Dims|Strides)"\s*:\s*\[(?:[0-9, \-]|\[[0-9, \-]*\])*\]')
