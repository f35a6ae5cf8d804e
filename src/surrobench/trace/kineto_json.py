"""Streaming reader for Chrome-trace JSON: ``traceEvents`` in slices, never the whole tree (``json.loads`` of a
400 MB trace: docs/benchmarks/trace-analysis.md).

Chunks are cut after the last ``}`` ``,`` ``{`` boundary and each slice parsed as a small array into
:data:`FIELDS` columns (:func:`decode_slice`: msgspec typed decode, else orjson, else the stdlib). A wrong cut (a
``}, {`` in a string) leaves the slice unbalanced; the rest is then parsed event by event, exactly. Bounds:
:data:`MAX_HEADER_BYTES` of metadata, :data:`MAX_EVENT_BYTES` per event, the decoders' nesting depth."""

from __future__ import annotations

import codecs
import io
import json
import re
import zlib
from collections.abc import Callable
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import Any, ClassVar, Union

from surrobench.collect.kineto_ops import no_cyclic_gc
from surrobench.errors import UsageError
from surrobench.trace.source import GZIP_MAGIC, check_text_encoding, open_bytes

CHUNK_BYTES = 8 << 20
"""Bytes read per step: slices stay in the tens of MB (docs/benchmarks/trace-analysis.md)."""
MAX_HEADER_BYTES = 64 << 20
"""Most bytes read looking for the ``traceEvents`` array (Kineto writes a few kB of metadata first)."""
MAX_EVENT_BYTES = 256 << 20
"""Largest run of bytes without an event boundary (one event, or whitespace between two)."""
EXACT_BATCH_EVENTS = 20_000
"""Events per callback in the exact (stdlib, event-by-event) path."""

OnEvents = Callable[[Any], None]  # takes a DictSlice or a decoder's equivalent

_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
#: The ``}, {`` between two events of the array (a chunk or a file is cut there).
EVENT_BOUNDARY = re.compile(rb"\}\s*,\s*\{")
_NON_BLANK = re.compile(r"[^ \t\r\n]")
_WS = b" \t\r\n"
_TAIL_WINDOW = 1 << 16
_UNREAD = "not a trace this tool reads"
_NOT_CHROME = "not a Chrome/Kineto trace"


def read_chrome_trace(path: Path, on_events: OnEvents) -> dict:
    """Stream the events at ``path`` (plain or gzip, file or pipe) to ``on_events`` as columns; the top-level metadata.
    Raises UsageError: empty, invalid JSON (offset), bad gzip, not UTF-8, no ``traceEvents``, a bound exceeded."""
    try:
        stream, head = open_bytes(path)
        with stream, no_cyclic_gc():
            return _Reader(stream, path, check_text_encoding(head, path)).run(on_events)
    except (EOFError, zlib.error) as exc:
        raise UsageError(f"{path}: truncated or corrupt gzip ({exc}); re-export the trace") from None
    except OSError as exc:  # gzip.BadGzipFile is an OSError
        raise UsageError(f"{path}: cannot read ({exc.strerror or exc})") from None


def locate_events(path: Path) -> tuple[dict, int, bool] | None:
    """Header and events offset of a plain file for :func:`read_event_range`; None otherwise."""
    stream, head = open_bytes(path)
    with stream:
        if head.startswith(GZIP_MAGIC) or not isinstance(stream.raw, io.FileIO):
            return None
        reader = _Reader(stream, path, check_text_encoding(head, path))
        header, bare = reader._header()
        return None if isinstance(bare, list) else (header, reader.offset, bare)


def read_event_range(path: Path, lo: int, hi: int | None, bare: bool, on_events: OnEvents) -> dict:
    """The events in bytes ``[lo, hi)`` of ``path`` (``hi`` None: to the end, with trailing metadata)."""
    with open(path, "rb") as file, no_cyclic_gc():
        reader = _Reader(_RangeStream(file, lo, hi), path, 0)
        reader.offset = lo
        return reader.events(on_events, bare or hi is not None)


class _RangeStream:
    """Bytes ``[lo, hi)`` of a file, then ``]`` when ``hi`` is given (the range reads as a bare array)."""

    def __init__(self, file, lo: int, hi: int | None) -> None:
        self.file = file
        self.file.seek(lo)
        self.left = None if hi is None else hi - lo
        self.tail = b"" if hi is None else b"]"

    def read(self, n: int) -> bytes:
        if self.left is None:
            return self.file.read(n)
        data = self.file.read(min(n, self.left)) if self.left > 0 else b""
        self.left -= len(data)
        if not data:
            data, self.tail = self.tail, b""
        return data


class _Reader:
    """Pending bytes over a byte stream; ``offset`` is the stream position of the first pending byte."""

    def __init__(self, stream, path: Path, skip: int) -> None:
        self.stream, self.path = stream, path
        self.parts: list[bytes] = []
        self.size, self.offset, self.eof = 0, 0, False
        if skip:
            self.stream.read(skip)
            self.offset = skip

    def fill(self) -> bytes:
        chunk = self.stream.read(CHUNK_BYTES)
        if chunk:
            self.parts.append(chunk)
            self.size += len(chunk)
        else:
            self.eof = True
        return chunk

    def pending(self) -> bytes:
        if len(self.parts) > 1:
            self.parts = [b"".join(self.parts)]
        return self.parts[0] if self.parts else b""

    def consume(self, n: int) -> None:
        data = self.pending()
        self.parts = [data[n:]] if n < len(data) else []
        self.size -= n
        self.offset += n

    def run(self, on_events: OnEvents) -> dict:
        header, bare = self._header()
        if isinstance(bare, list):  # the whole (small) document was parsed to find its events
            on_events(DictSlice(bare))
            return header
        return {**header, **self.events(on_events, bare)}

    def events(self, on_events: OnEvents, bare: bool) -> dict:
        """From just after the array's ``[``: every event to ``on_events``; returns the metadata after it."""
        while not self.eof:
            chunk = self.fill()
            cut = _last_boundary(chunk)  # in the new chunk only: no byte is searched twice
            if cut < 0:
                if self.size > MAX_EVENT_BYTES:
                    huge = f"no event boundary in {MAX_EVENT_BYTES >> 20} MiB (one huge event, or a run of filler)"
                    self._fail(0, f"{huge}; {_UNREAD}")
                continue
            before = self.parts[:-1]
            try:  # one copy: the pending bytes up to the cut, in brackets
                events = decode_slice(b"".join((b"[", *before, memoryview(chunk)[: cut + 1], b"]")))
            except SYNTAX_ERRORS:
                break  # a wrong cut or a real error: the exact path decides which
            on_events(events)
            del events
            start = chunk.index(b"{", cut + 1)
            self.offset += sum(map(len, before)) + start
            self.parts = [chunk[start:]]
            self.size = len(self.parts[0])
        return _Exact(self, on_events, bare).run()

    def _header(self) -> tuple[dict, bool | list]:
        """Consume up to after the events' ``[``: (metadata before it, bare); a nested ``traceEvents`` parses the header whole."""
        scanned = 0
        while True:
            self.fill()
            data = self.pending()
            body = data.lstrip(_WS)
            if body[:1] == b"[":
                self.consume(len(data) - len(body) + 1)
                self._refuse_wrapped_trace()
                return {}, True
            if body[:1] not in (b"{", b""):
                self._not_a_trace(self._json(data))
            match = _EVENTS_KEY.search(data, max(0, scanned - 64))  # a key cut by the chunk edge
            scanned = len(data)
            if match:
                head = data[: match.start()].rstrip(_WS).rstrip(b",")
                try:
                    meta = json.loads(head + b"}") if head.strip(_WS) != b"{" else {}
                except (ValueError, RecursionError):
                    return self._whole_document()
                self.consume(match.end())
                return meta, False
            if self.eof or self.size > MAX_HEADER_BYTES:
                self._not_a_trace(self._json(data))

    def _whole_document(self) -> tuple[dict, list]:
        while not self.eof and self.size <= MAX_HEADER_BYTES:
            self.fill()
        if not self.eof:
            self._fail(
                0, f"'traceEvents' is not a top-level key in the first {MAX_HEADER_BYTES >> 20} MiB; {_NOT_CHROME}"
            )
        doc = self._json(self.pending())
        if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
            self._not_a_trace(doc)
        events = doc.pop("traceEvents")
        return doc, events

    def _refuse_wrapped_trace(self) -> None:
        while self.size < CHUNK_BYTES and not self.eof:
            self.fill()
        if _EVENTS_KEY.search(self.pending(), 0, CHUNK_BYTES):
            raise UsageError(
                f"{self.path}: a JSON array holding a trace object (an element has 'traceEvents'); "
                "pass the trace object itself"
            )

    def _not_a_trace(self, doc) -> None:
        if self.size > MAX_HEADER_BYTES:
            raise UsageError(
                f"{self.path}: no 'traceEvents' array in the first {MAX_HEADER_BYTES >> 20} MiB; {_NOT_CHROME}"
            )
        if isinstance(doc, dict) and '"traceEvents"' in json.dumps(doc):
            raise UsageError(
                f"{self.path}: 'traceEvents' is nested inside another key, not at the top level; {_NOT_CHROME}"
            )
        raise UsageError(f"{self.path}: JSON {type(doc).__name__} without a 'traceEvents' array; {_NOT_CHROME}")

    def _json(self, data: bytes):
        """Parse a small JSON document from the start of the pending bytes; errors carry the offset."""
        if not data.strip(_WS):
            raise UsageError(f"{self.path}: empty file; expected a Chrome trace (torch.profiler export)")
        if self.size > MAX_HEADER_BYTES:
            self._not_a_trace(None)
        try:
            return json.loads(data)
        except UnicodeDecodeError as exc:
            self._fail(exc.start, "not UTF-8 text")
        except RecursionError:
            self._fail(0, "nested too deeply")
        except json.JSONDecodeError as exc:
            self._fail(len(exc.doc[: exc.pos].encode("utf-8", "surrogatepass")), exc.msg)

    def _fail(self, pos: int, msg: str) -> None:
        raise UsageError(f"{self.path}: invalid JSON at byte {self.offset + pos}: {msg}")


class _Exact:
    """The rest of the array event by event (``raw_decode``), then the metadata; one event in memory."""

    def __init__(self, reader: _Reader, on_events: OnEvents, bare: bool) -> None:
        self.r, self.on_events, self.bare = reader, on_events, bare
        self.decoder = codecs.getincrementaldecoder("utf-8")()
        self.text, self.pos, self.base = "", 0, reader.offset
        self._decode(reader.pending())
        reader.parts, reader.size = [], 0

    def _decode(self, data: bytes, final: bool = False) -> None:
        try:
            self.text += self.decoder.decode(data, final)
        except UnicodeDecodeError as exc:
            self.fail(len(self.text) + exc.start, "not UTF-8 text", chars=False)

    def more(self) -> bool:
        """Read another chunk into ``text``; False at end of stream."""
        if self.r.eof:
            return False
        self.trim()
        chunk = self.r.stream.read(CHUNK_BYTES)
        if not chunk:
            self.r.eof = True
            self._decode(b"", final=True)
            return False
        self._decode(chunk)
        if len(self.text) - self.pos > MAX_EVENT_BYTES:
            self.fail(self.pos, f"an event larger than {MAX_EVENT_BYTES >> 20} MiB; {_UNREAD}")
        return True

    def trim(self) -> None:
        if self.pos > CHUNK_BYTES:
            self.base += len(self.text[: self.pos].encode("utf-8", "surrogatepass"))
            self.text, self.pos = self.text[self.pos :], 0

    def skip_ws(self) -> str:
        """The next non-blank character ('' at end of stream), reading more as needed."""
        start = self.base + self.pos
        while True:
            found = _NON_BLANK.search(self.text, self.pos)
            self.pos = found.start() if found else len(self.text)
            if found or not self.more():
                return self.text[self.pos : self.pos + 1]
            if self.base + self.pos - start > MAX_EVENT_BYTES:  # counts chars: blanks are one byte each
                self.fail(self.pos, f"more than {MAX_EVENT_BYTES >> 20} MiB of blank space; {_UNREAD}")

    def value(self) -> Any:
        while True:
            try:
                value, end = json.JSONDecoder().raw_decode(self.text, self.pos)
            except json.JSONDecodeError as exc:
                if self.more():
                    continue
                truncated = exc.pos >= len(self.text.rstrip()) - 1
                self.fail(exc.pos, f"{exc.msg} (file truncated?)" if truncated else exc.msg)
            except RecursionError:
                self.fail(self.pos, "nested too deeply")
            if end == len(self.text) and self.more():  # a number may continue in the next chunk
                continue
            self.pos = end
            return value

    def run(self) -> dict:
        batch: list = []
        if self.skip_ws() == "]":
            self.pos += 1
        else:
            while True:
                batch.append(self.value())
                if len(batch) >= EXACT_BATCH_EVENTS:
                    self.on_events(DictSlice(batch))
                    batch = []
                sep = self.skip_ws()
                if sep not in (",", "]"):
                    self.fail(self.pos, "expected ',' or ']' after an event (file truncated?)")
                self.pos += 1
                if sep == "]":
                    break
                self.skip_ws()
        if batch:
            self.on_events(DictSlice(batch))
        return self.trailer()

    def trailer(self) -> dict:
        sep = self.skip_ws()
        if self.bare:
            if sep:
                self.fail(self.pos, "extra data after the event array")
            return {}
        if sep == "}":
            self.pos += 1
            if self.skip_ws():
                self.fail(self.pos, "extra data after the trace object")
            return {}
        if sep != ",":
            self.fail(self.pos, "expected ',' or '}' after the traceEvents array")
        while self.more():
            if len(self.text) - self.pos > MAX_HEADER_BYTES:
                self.fail(self.pos, f"more than {MAX_HEADER_BYTES >> 20} MiB of metadata after the events")
        rest = self.text[self.pos + 1 :]
        try:
            meta = json.loads("{" + rest)
        except json.JSONDecodeError as exc:
            self.fail(self.pos + max(exc.pos - 1, 0), exc.msg)
        except RecursionError:
            self.fail(self.pos, "nested too deeply")
        return meta

    def fail(self, pos: int, msg: str, chars: bool = True) -> None:
        at = len(self.text[:pos].encode("utf-8", "surrogatepass")) if chars else pos
        raise UsageError(f"{self.r.path}: invalid JSON at byte {self.base + at}: {msg}")


def _last_boundary(buf: bytes) -> int:
    """Index of the ``}`` that ends the last event followed by ``, {`` in ``buf``; -1 if none."""
    lo = max(0, len(buf) - _TAIL_WINDOW)
    while True:
        last = None
        for last in EVENT_BOUNDARY.finditer(buf, lo):
            pass
        if last is not None:
            return last.start()
        if lo == 0:
            return -1
        lo = max(0, len(buf) - 8 * (len(buf) - lo))  # geometric: each byte searched O(1) times


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
_ARGS_KEY = {f: f for f in FIELDS[-5:]} | {"external_id": "External id"}  # each args field's key in ``args``


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
