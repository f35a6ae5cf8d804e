"""Streaming reader for Chrome-trace JSON: the ``traceEvents`` array in slices, never the whole tree.

Why not ``json.loads``: on a 400 MB Kineto trace it takes ~20 s and several GB (docs/benchmarks/
trace-analysis.md), because every event becomes a dict at once. Here the file is read in chunks; each
chunk is cut after the last ``}`` ``,`` ``{`` boundary, the slice is parsed as one small JSON array
(orjson when installed, else the stdlib) and handed to a callback that turns it into columns, so only
one slice of event objects is alive at a time.

The cut is a guess: a ``}, {`` inside a string would split an event. A wrong cut always leaves the
slice unbalanced, so its parse fails; the reader then parses the rest of the file event by event with
the stdlib decoder, which is exact and reports the byte offset of real syntax errors.
"""

from __future__ import annotations

import gc
import gzip
import json
import re
import zlib
from collections.abc import Callable
from pathlib import Path

from surrobench.errors import UsageError

try:
    import orjson

    _loads = orjson.loads
    _FAST_ERRORS: tuple[type[Exception], ...] = (orjson.JSONDecodeError, ValueError)
except ImportError:  # the pure-Python path: same slicing, stdlib parser (~2x slower, docs/benchmarks)
    _loads = json.loads
    _FAST_ERRORS = (ValueError,)

CHUNK_BYTES = 8 << 20
"""Bytes read per step. 8 MiB: large enough that per-slice overhead is negligible, small enough that a
slice of parsed events stays in the tens of MB (measured, docs/benchmarks/trace-analysis.md)."""

EXACT_BATCH_EVENTS = 20_000
"""Events per callback in the exact (stdlib, event-by-event) path."""

_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
# record_shapes=True adds "Input Dims"/"Input Strides" (nested integer lists) to every cpu_op: a third of
# the bytes and most of the parse time (measured: 0.61 s vs 0.27 s + 0.16 s substitution per 50 MB).
# No analysis reads them, so they are replaced by a placeholder before parsing. The pattern only
# matches a key-value pair outside strings (a quote inside a string is escaped) and a pure integer list.
_SHAPE_ARGS = re.compile(rb'"Input (?:Dims|Strides)"\s*:\s*\[(?:[0-9, \-]|\[[0-9, \-]*\])*\]')
_BOUNDARY = re.compile(rb"\}\s*,\s*\{")
_WS = b" \t\r\n"
_TAIL_WINDOW = 1 << 16

OnEvents = Callable[[list], None]


def read_chrome_trace(path: Path, on_events: OnEvents) -> dict:
    """Stream the events of the Chrome trace at ``path`` to ``on_events`` in slices (lists of dicts).

    Returns the top-level metadata (every key but ``traceEvents``, from before and after the array);
    ``{}`` for a bare-array trace. Plain or gzip (detected by magic bytes).

    Raises:
        UsageError: empty file, invalid JSON (with the byte offset), truncated or corrupt gzip, or a
            JSON document without a ``traceEvents`` array.
    """
    gc_was_enabled = gc.isenabled()
    gc.disable()  # millions of acyclic dicts: the cyclic GC would rescan them all (3x slower, measured)
    try:
        with _open(path) as stream:
            return _Reader(stream, path).run(on_events)
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise UsageError(f"{path}: truncated or corrupt gzip ({exc}); re-export the trace") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read ({exc.strerror or exc})") from None
    finally:
        if gc_was_enabled:
            gc.enable()


def _open(path: Path):
    with open(path, "rb") as probe:
        magic = probe.read(2)
    return gzip.open(path, "rb") if magic == b"\x1f\x8b" else open(path, "rb")


class _Reader:
    """Buffer over a byte stream; ``offset`` is the stream position of ``buf[0]``."""

    def __init__(self, stream, path: Path) -> None:
        self.stream, self.path = stream, path
        self.buf, self.offset, self.eof = b"", 0, False

    def fill(self) -> None:
        chunk = self.stream.read(CHUNK_BYTES)
        if chunk:
            self.buf += chunk
        else:
            self.eof = True

    def consume(self, n: int) -> None:
        self.buf = self.buf[n:]
        self.offset += n

    def run(self, on_events: OnEvents) -> dict:
        header, bare = self._header()
        while not self.eof:
            self.fill()
            cut = _last_boundary(self.buf)
            if cut < 0:
                continue
            try:
                events = _loads(b"[" + _SHAPE_ARGS.sub(b'"_": 0', self.buf[: cut + 1]) + b"]")
            except _FAST_ERRORS:
                break  # a wrong cut or a real error: the exact path decides which
            on_events(events)
            del events
            self.consume(self.buf.index(b"{", cut + 1))
        while not self.eof:
            self.fill()
        trailer = self._exact_rest(on_events, bare)
        return {**header, **trailer}

    def _header(self) -> tuple[dict, bool]:
        """Position ``buf`` just after the events array's ``[``; return (metadata before it, bare)."""
        while True:
            self.fill()
            start = len(self.buf) - len(self.buf.lstrip(_WS))
            if start < len(self.buf) and self.buf[start:start + 1] == b"[":
                self.consume(start + 1)
                return {}, True
            match = _EVENTS_KEY.search(self.buf)
            if match:
                head = self.buf[: match.start()].rstrip(_WS).rstrip(b",")
                meta = self._json(head + b"}", 0) if head.strip(_WS) != b"{" else {}
                self.consume(match.end())
                return meta, False
            if self.eof:
                self._not_a_trace()

    def _not_a_trace(self) -> None:
        if not self.buf.strip(_WS):
            raise UsageError(f"{self.path}: empty file; expected a Chrome trace (torch.profiler export)")
        doc = self._json(self.buf, 0)
        kind = type(doc).__name__
        raise UsageError(f"{self.path}: JSON {kind} without a 'traceEvents' array; not a Chrome/Kineto trace")

    def _json(self, data: bytes, at: int):
        """Parse a small JSON document that starts at buffer position ``at``; errors carry the offset."""
        try:
            return json.loads(data)
        except UnicodeDecodeError as exc:
            self._fail(at + exc.start, "not UTF-8 text")
        except json.JSONDecodeError as exc:
            self._fail(at + len(exc.doc[: exc.pos].encode()), exc.msg)

    def _fail(self, pos: int, msg: str) -> None:
        raise UsageError(f"{self.path}: invalid JSON at byte {self.offset + pos}: {msg}")

    def _exact_rest(self, on_events: OnEvents, bare: bool) -> dict:
        """Parse what is left of the array event by event, then the metadata after it."""
        try:
            text = self.buf.decode("utf-8")
        except UnicodeDecodeError as exc:
            self._fail(exc.start, "not UTF-8 text")
        decoder, pos, batch = json.JSONDecoder(), _skip_ws(text, 0), []
        if text.startswith("]", pos):
            pos += 1
        else:
            while True:
                try:
                    event, pos = decoder.raw_decode(text, pos)
                except json.JSONDecodeError as exc:
                    self._fail_text(text, exc.pos, _eof_hint(exc, text))
                batch.append(event)
                if len(batch) >= EXACT_BATCH_EVENTS:
                    on_events(batch)
                    batch = []
                pos = _skip_ws(text, pos)
                sep = text[pos:pos + 1]
                if sep not in (",", "]"):
                    self._fail_text(text, pos, "expected ',' or ']' after an event (file truncated?)")
                pos = _skip_ws(text, pos + 1)
                if sep == "]":
                    break
        if batch:
            on_events(batch)
        return self._trailer(text, _skip_ws(text, pos), bare)

    def _trailer(self, text: str, pos: int, bare: bool) -> dict:
        rest = text[pos:].rstrip()
        if bare:
            if rest:
                self._fail_text(text, pos, "extra data after the event array")
            return {}
        if rest == "}":
            return {}
        if not rest.startswith(","):
            self._fail_text(text, pos, "expected ',' or '}' after the traceEvents array")
        try:
            return json.loads("{" + rest[1:])
        except json.JSONDecodeError as exc:
            self._fail_text(text, pos + exc.pos, exc.msg)

    def _fail_text(self, text: str, pos: int, msg: str) -> None:
        self._fail(len(text[:pos].encode()), msg)


def _skip_ws(text: str, pos: int) -> int:
    n = len(text)
    while pos < n and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _eof_hint(exc: json.JSONDecodeError, text: str) -> str:
    return f"{exc.msg} (file truncated?)" if exc.pos >= len(text.rstrip()) - 1 else exc.msg


def _last_boundary(buf: bytes) -> int:
    """Index of the ``}`` that ends the last event followed by ``, {`` in ``buf``; -1 if none."""
    lo = max(0, len(buf) - _TAIL_WINDOW)
    while True:
        last = None
        for last in _BOUNDARY.finditer(buf, lo):
            pass
        if last is not None:
            return last.start()
        if lo == 0:
            return -1
        lo = max(0, lo - 8 * _TAIL_WINDOW)
