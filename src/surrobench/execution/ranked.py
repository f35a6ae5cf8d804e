"""One config measured on every rank at once: a barrier on the host-side (gloo) group before each timed iteration,
so a distributed step is the max over ranks of the same iteration; the model's own torch.distributed calls
recorded (:class:`~surrobench.execution.collectives.CollectiveRecorder`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from surrobench.execution.collectives import CollectiveRecorder
from surrobench.execution.config import ExecConfig
from surrobench.execution.runner import PreparedModel, run_config
from surrobench.records.run import ConfigResult


def run_config_together(
    cfg: ExecConfig, prepared: PreparedModel, barrier: Callable[[], None]
) -> tuple[ConfigResult, list[tuple[np.ndarray, np.ndarray]]]:
    """Measure ``cfg`` on this rank, ``barrier`` before each timed call (a failed rank takes the ones it missed).
    Returns the result and, per timed iteration, the ``(start, end)`` ns of its torch.distributed calls from the
    iteration's start (empty when it failed)."""
    recorder = CollectiveRecorder(cfg.device)
    met = 0

    def before_each() -> None:
        nonlocal met
        recorder.stop()  # the barrier is ours, not the model's
        barrier()
        met += 1
        recorder.begin_step()

    with recorder.patched():
        result = run_config(cfg, prepared, before_each)
    for _ in range(cfg.iters - met):
        barrier()
    return result, (recorder.step_intervals_ns() if result.status == "ok" else [])
