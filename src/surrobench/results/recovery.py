"""Where a command keeps what its results database could not take (:class:`~surrobench.errors.Unsaved`): a
recovery file, the run's JSON, beside the database, else in the current folder, else in the temporary folder.
``surrobench import`` reads it back (:meth:`surrobench.results.store.ResultStore.add_run`)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def recovery_name(db: str | Path, run_id: str) -> str:
    """The recovery file's name for run ``run_id`` of database ``db``: ``surrobench.unsaved-RUN_ID.json``."""
    return f"{Path(db).stem}.unsaved-{run_id}.json"


def write_recovery(document: dict, db: str | Path, run_id: str) -> Path | None:
    """Write ``document`` (a run JSON) as :func:`recovery_name` in the first folder that takes it whole (written
    beside it and renamed; a folder where the name is taken passed over): the database's own, the current one, the
    temporary one. Returns the path written, or None when no folder took it."""
    data = (json.dumps(document, indent=1) + "\n").encode()
    name = recovery_name(db, run_id)
    try:
        here = [Path.cwd()]
    except OSError:  # the current folder was removed
        here = []
    for folder in dict.fromkeys([Path(db).resolve().parent, *here, Path(tempfile.gettempdir())]):
        target = folder / name
        if target.exists():
            continue
        try:
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".tmp")
        except OSError:
            continue
        try:
            umask = os.umask(0)  # the mode open() gives a new file, not mkstemp's 0600
            os.umask(umask)
            os.fchmod(fd, 0o666 & ~umask)
            with os.fdopen(fd, "wb") as stream:
                stream.write(data)
            os.replace(tmp, target)
            return target
        except OSError:
            Path(tmp).unlink(missing_ok=True)
    return None
