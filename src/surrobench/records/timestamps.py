"""The one format of a stored creation time (``created`` of runs, serve runs and optimizations): ISO 8601 in UTC
to the second, with its offset (``2026-12-04T18:30:08+00:00``). Serve runs stored before this wrote the local
time without an offset (``2026-12-02T01:28:56``); :func:`created_utc` reads both.
"""

from __future__ import annotations

import datetime as dt


def created_now() -> str:
    """This instant as a stored ``created``: ISO 8601, UTC, seconds, ``+00:00``."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def created_utc(text: str) -> str:
    """A stored ``created`` in the one format (:func:`created_now`): a time with an offset converted to UTC, a time
    without one (an older serve run's ``datetime.now()``) read as the local time of this machine, as it was
    written; text that is no ISO time is returned as it is."""
    try:
        instant = dt.datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return text
    return instant.astimezone(dt.timezone.utc).isoformat(timespec="seconds")
