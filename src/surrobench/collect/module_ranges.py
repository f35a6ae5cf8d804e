"""``nn.Module`` paths in a profile: one ``record_function`` range per module call, opened by forward hooks.

Each submodule of the profiled model (``model.named_modules()``) gets a forward pre-hook that opens the range
``surrobench::module::<path>`` (:data:`~surrobench.records.kernels.MODULE_RANGE_PREFIX`; the root is ``""``)
and a forward hook that closes it, registered with ``always_call=True`` so a forward that raises closes it
too. The kernel table reads the innermost range around each op as the op's module
(:func:`surrobench.collect.op_events.tables_from_events`).

Why hooks (docs/design.md, "Kernel attribution"): torch.profiler's ``with_modules`` records module
hierarchies for TorchScript only, and ``with_stack``'s Python tracer names module *classes* (``nn.Module:
Linear_0``), not their paths, at a cost per Python call. Hooks need nothing of the model but that it is an
``nn.Module``, so they hold on third-party models. They do not hold where the step runs no module forward
in Python: a CUDA-graph replay, or a ``torch.compile``'d module (hooks are traced into the graph or break it,
changing what is measured): :func:`modules_lost` says so and no hook is installed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from torch import nn
from torch.profiler import record_function

from surrobench.records.kernels import MODULE_RANGE_PREFIX

#: Why each mode has no module paths (None: hooks hold).
_LOST = {
    "eager": None,
    "compile": "torch.compile mode: the compiled step runs no module forward in Python",
    "cudagraph": "CUDA-graph mode: a graph replay runs no module forward",
}


def modules_lost(mode: str) -> str | None:
    """Why a config of ``mode`` records no module paths; None where it does (eager)."""
    return _LOST.get(mode, f"{mode} mode: no module hooks")


@contextlib.contextmanager
def module_ranges(model: nn.Module) -> Iterator[None]:
    """Open a ``surrobench::module::<path>`` range around every module call of ``model`` while inside; the
    hooks are removed on exit. A module called again inside itself nests a second range."""
    handles, open_ranges = [], {}

    def enter(path: str):
        def pre_hook(module, args):
            scope = record_function(MODULE_RANGE_PREFIX + path)
            scope.__enter__()
            open_ranges.setdefault(path, []).append(scope)

        return pre_hook

    def leave(path: str):
        def hook(module, args, output):
            stack = open_ranges.get(path)
            if stack:
                stack.pop().__exit__(None, None, None)

        return hook

    try:
        for path, module in model.named_modules():
            handles.append(module.register_forward_pre_hook(enter(path)))
            handles.append(module.register_forward_hook(leave(path), always_call=True))
        yield
    finally:
        for handle in handles:
            handle.remove()
