"""Calibrated ceilings (``surrobench calibrate``) kept per machine, not per results database.

A diagnosis in any folder, against any ``--db``, finds the ceilings of the machine it runs on. They live
in one JSON file in the user's cache folder: ``$SURROBENCH_CACHE_DIR``, else ``$XDG_CACHE_HOME/surrobench``,
else ``~/.cache/surrobench`` (the XDG Base Directory Specification,
https://specifications.freedesktop.org/basedir-spec/latest/). Entries are keyed by host and device name and,
on the CPU, by the intra-op thread count: a CPU's matmul rate scales with the threads torch uses.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

from surrobench.errors import UsageError
from surrobench.records.ceilings import Ceilings
from surrobench.results.store import replace_file

CACHE_ENV = "SURROBENCH_CACHE_DIR"
_FILE = "ceilings.json"


def cache_dir() -> Path:
    """The folder of per-machine state (:data:`CACHE_ENV`, XDG cache home, ``~/.cache``; module docstring)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "surrobench"


def machine_key(device_name: str, threads: int | None = None) -> str:
    """``host|device name`` and, for a CPU calibration, ``|threads=N``."""
    key = f"{socket.gethostname()}|{device_name}"
    return key if threads is None else f"{key}|threads={threads}"


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise UsageError(
            f"ceilings cache {str(path)!r} is unreadable ({exc}); delete it and run surrobench calibrate again"
        ) from None
    return data if isinstance(data, dict) else {}


def save_ceilings(ceilings: Ceilings, threads: int | None = None) -> Path:
    """Store (or replace) the ceilings of this machine's ``ceilings.device_name`` (at ``threads`` on a CPU);
    written beside the file and renamed, so a reader never sees half of it. Returns the file.

    Raises:
        UsageError: the cache folder cannot be created or written.
    """
    path = cache_dir() / _FILE
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = _read(path)
        data[machine_key(ceilings.device_name, threads)] = ceilings.to_json()
        replace_file(path, json.dumps(data, indent=1).encode())
    except OSError as exc:
        raise UsageError(
            f"cannot store the ceilings in {str(path)!r} ({exc.strerror or exc}); set {CACHE_ENV} to a writable folder"
        ) from None
    return path


def load_ceilings(device_name: str, threads: int | None = None) -> Ceilings | None:
    """This machine's stored ceilings of ``device_name`` (at ``threads`` on a CPU), or None when it was never
    calibrated (or the entry is not a ceilings object)."""
    entry = _read(cache_dir() / _FILE).get(machine_key(device_name, threads))
    try:
        return Ceilings.from_json(entry) if isinstance(entry, dict) else None
    except TypeError:
        return None
