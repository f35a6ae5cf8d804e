"""Opening a trace's bytes: files and pipes only, gzip by content, idle pipes given up."""

from __future__ import annotations

import gzip
import io
import os
import select
import stat
from pathlib import Path

from surrobench.errors import UsageError

SQLITE_MAGIC = b"SQLite format 3\x00"
GZIP_MAGIC = b"\x1f\x8b"
PIPE_IDLE_TIMEOUT_S = 60.0
"""Seconds a pipe may stay silent before the read is abandoned (else an unwritten FIFO blocks)."""

_UTF16_32_BOMS = (b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")
_UTF8_BOM = b"\xef\xbb\xbf"


def file_kind(path: Path) -> str:
    """``"file"``, ``"pipe"`` or ``"dir"`` for ``path``. Raises UsageError: missing, bad name, device or socket."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file or folder") from None
    except OSError as exc:
        raise UsageError(f"{_short(path)}: cannot read ({exc.strerror or exc})") from None
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISFIFO(mode):
        return "pipe"
    if stat.S_ISDIR(mode):
        return "dir"
    raise UsageError(f"{path}: not a regular file, folder or pipe (a device or socket); pass a trace file")


def open_bytes(path: Path) -> tuple[io.BufferedIOBase, bytes]:
    """``(stream, head)``: the whole (gunzipped) content and its first 16 bytes. Raises UsageError."""
    kind = file_kind(path)
    try:
        raw = _PipeReader(path) if kind == "pipe" else io.FileIO(path, "rb")
    except OSError as exc:
        raise UsageError(f"{_short(path)}: cannot read ({exc.strerror or exc})") from None
    stream = io.BufferedReader(raw, 1 << 20)
    magic = _peek(stream, 2)
    if magic == GZIP_MAGIC:
        stream = io.BufferedReader(gzip.GzipFile(fileobj=stream, mode="rb"), 1 << 20)
    return stream, _peek(stream, 16)


def check_text_encoding(head: bytes, path: Path) -> int:
    """Bytes to skip at the start (a UTF-8 BOM). Raises UsageError: UTF-16 or UTF-32 (RFC 8259 §8.1)."""
    if head.startswith(_UTF8_BOM):
        return len(_UTF8_BOM)
    if head.startswith(_UTF16_32_BOMS) or b"\x00" in head[:4] and head.strip(b"\x00")[:1] in (b"{", b"["):
        raise UsageError(f"{path}: UTF-16/UTF-32 text; JSON traces must be UTF-8 (re-save it as UTF-8)")
    return 0


def _peek(stream: io.BufferedReader, n: int) -> bytes:
    """Up to ``n`` leading bytes without consuming them (a pipe may deliver fewer per read)."""
    head = stream.peek(n)[:n]
    while len(head) < n:
        more = stream.peek(n)
        if len(more) <= len(head):
            break
        head = more[:n]
    return head


class _PipeReader(io.RawIOBase):
    """Raw reads from a pipe or FIFO that give up after :data:`PIPE_IDLE_TIMEOUT_S` of silence."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO without a writer: no blocking open

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while True:
            try:
                data = os.read(self.fd, len(buffer))
            except BlockingIOError:
                self._wait("the pipe sent no data for {s:g} s; pass a trace file or a pipe that a program is writing")
                continue
            if not data and not self._writer_seen():
                self._wait("nothing is writing to this FIFO (waited {s:g} s); pass a trace file")
                continue
            buffer[: len(data)] = data
            return len(data)

    def _wait(self, silent: str) -> None:
        """Until the pipe is readable. Raises UsageError: ``silent`` (``{s}``: the seconds) after
        :data:`PIPE_IDLE_TIMEOUT_S` of nothing."""
        if not select.select([self.fd], [], [], PIPE_IDLE_TIMEOUT_S)[0]:
            raise UsageError(f"{self.path}: {silent.format(s=PIPE_IDLE_TIMEOUT_S)}") from None

    def _writer_seen(self) -> bool:
        """Whether a writer ever opened the pipe (POLLHUP only after one did, pipe(7))."""
        poller = select.poll()
        poller.register(self.fd, select.POLLIN | select.POLLHUP)
        return any(ev & (select.POLLHUP | select.POLLIN) for _, ev in poller.poll(0))

    def close(self) -> None:
        if not self.closed:
            os.close(self.fd)
        super().close()


def _short(path: Path) -> str:
    text = str(path)
    return text if len(text) <= 120 else text[:60] + "…" + text[-40:]
