"""The model as a batch service for ``surrobench serve``: ``service(k)`` runs k requests padded to a fixed size.

A request is ``run``'s batch-1 input of the config. One step per padded size
(:func:`surrobench.records.serve.padded_sizes`), built by ``run``'s :func:`~surrobench.execution.runner.config_step` and
called once before timing (compilation and capture stay out of latencies). A batch copies its requests into the step's
static input buffer, runs it and synchronizes; on CUDA its compute time is read from CUDA events.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace

import torch

from surrobench.errors import ModelError
from surrobench.execution.batcher import Service
from surrobench.execution.config import ExecConfig
from surrobench.execution.interleave import clone_output
from surrobench.execution.runner import ModelOutputError, PreparedModel, check_output, config_step, error_text
from surrobench.execution.runner import first_calls_nonfinite, in_grad_mode, input_specs
from surrobench.execution.sanity import MemoryWatch, check_calls, nonfinite_message
from surrobench.execution.env import leak_warning
from surrobench.execution.timing import warm_up
from surrobench.records.config import InputSpec
from surrobench.records.serve import padded_size, padded_sizes
from surrobench.workload.inputs import make_input_sets
from surrobench.workload.loader import one_line


class NonfiniteOutputError(ModelError):
    """A padded size's first output held NaN/Inf (``found``: its :func:`check_calls` record and the padded ``batch``):
    serving it would time a broken forward."""

    def __init__(self, found: dict) -> None:
        super().__init__(f"padded batch {found['batch']}: {nonfinite_message(found)}")
        self.found = found


@dataclass
class ServiceChecks:
    """``run``'s checks of the forward as the service sees them: memory at each load point's end (:meth:`point_done`),
    and each padded size's output once more when serving ends (``nonfinite``, with its padded ``batch``)."""

    label: str
    watch: MemoryWatch
    batches: int = 0
    nonfinite: dict | None = None

    def point_done(self) -> None:
        self.watch.sample(self.batches)
        self.batches = 0

    def notes(self) -> tuple[str, ...]:
        """The leak warning and the non-finite output, if seen."""
        growth, found = self.watch.growth(), self.nonfinite
        notes = (leak_warning([(self.label, growth)]),) if growth else ()
        return notes + ((f"{self.label}: nonfinite: {NonfiniteOutputError(found)}",) if found else ())


@dataclass(frozen=True)
class ServiceInfo:
    """The service as built: one request's input shape (``inputs``: each of its inputs), the padded sizes, ``checks``,
    and the batch-1 step's output after the warm-up (for the accuracy guard)."""

    request_shape: tuple[int, ...]
    inputs: tuple[InputSpec, ...]
    sizes: tuple[int, ...]
    checks: ServiceChecks
    first_output: object = None


@contextlib.contextmanager
def _model_errors(cfg: ExecConfig) -> Iterator[None]:
    """What the user's model raises (sys.exit, an output of no tensor; not surrobench's errors) as one ModelError."""
    try:
        yield
    except ModelError:
        raise
    except (Exception, SystemExit) as exc:  # the model's code: any exception type
        if type(exc).__module__.startswith("surrobench.") and not isinstance(exc, ModelOutputError):
            raise
        why = error_text(exc) if isinstance(exc, SystemExit) else one_line(exc)
        raise ModelError(f"{cfg.label()}: the model raised {why}") from exc


def _first_called(cfg: ExecConfig, prepared: PreparedModel, sizes, warmup: int, stack: contextlib.ExitStack) -> dict:
    """``{size: (step, inputs)}`` of each padded size, all built before any runs (building a compiled step resets
    Dynamo's caches), then each called and checked (:class:`NonfiniteOutputError`) and warmed up; their settings
    kept on ``stack`` once all ran."""
    with contextlib.ExitStack() as built:
        steps = {}
        for size in sizes:
            step, input_sets = built.enter_context(config_step(replace(cfg, batch=size, input_sets=1), prepared))
            steps[size] = (step, input_sets[0])
        for size, (step, _) in steps.items():
            output = step(0)
            check_output(output)
            if found := first_calls_nonfinite(step, output, 1):  # its one input set
                raise NonfiniteOutputError({**found, "batch": size})
            warm_up(step, warmup, cfg.device)
        stack.enter_context(built.pop_all())
    return steps


@contextlib.contextmanager
def model_service(
    cfg: ExecConfig, prepared: PreparedModel, max_batch: int, warmup: int
) -> Iterator[tuple[Service, ServiceInfo]]:
    """Inside the config's settings and the model's grad mode (:func:`~surrobench.execution.runner.in_grad_mode`):
    ``service(k)`` for ``1 <= k <= max_batch`` and its info; each padded size's step called ``1 + warmup`` times
    first, its output checked (ModelOutputError, NonfiniteOutputError).

    Raises:
        ModelError: the model raised while its steps were built, called first or served (one line: its type and
            message), so serve stores what it measured and says why in one line, as ``run`` does for a config.
    """
    sizes = padded_sizes(max_batch)
    device = cfg.device
    with contextlib.ExitStack() as stack, _model_errors(cfg):
        steps = in_grad_mode(prepared, lambda: _first_called(cfg, prepared, sizes, warmup, stack))
        # per input tensor, max_batch batch-1 requests stacked, or None for one shared by every request (a mesh)
        sets = make_input_sets(prepared.surrogate, 1, cfg.shape, device=device, seed=cfg.seed, n_sets=cfg.input_sets)
        pool: list[torch.Tensor | None] = []
        for t, tensor in enumerate(sets[0]):
            if tensor.dim() == 0 or tensor.shape[0] != 1:
                pool.append(None)
                continue
            pool.append(torch.cat([sets[j % len(sets)][t] for j in range(max_batch)]))
        first_output = clone_output(steps[sizes[0]][0](0))
        checks = ServiceChecks(cfg.label(), MemoryWatch(device))

        def run_batch(k: int) -> None:
            step, buffers = steps[padded_size(k, sizes)]
            for buffer, requests in zip(buffers, pool):
                if requests is not None:
                    buffer[:k].copy_(requests[:k])
            step(0)
            checks.batches += 1

        def service(k: int) -> float:
            if device != "cuda":
                began = time.perf_counter()
                run_batch(k)
                return time.perf_counter() - began
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            run_batch(k)
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / 1e3

        info = ServiceInfo(
            request_shape=(1, *pool[0].shape[1:]) if pool and pool[0] is not None else (),
            inputs=input_specs(sets[0]),
            sizes=sizes,
            first_output=first_output,
            checks=checks,
        )
        checks.batches = 0
        checks.watch.sample()  # opens the first interval: the load points' batches follow
        yield service, info
        for size, (step, _) in steps.items():
            found = checks.nonfinite or check_calls(step, [0], 1 + warmup, "end")
            checks.nonfinite = found and {"batch": size, **found}
