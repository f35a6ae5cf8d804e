"""``nn.Module`` paths in a profile: forward (pre-)hooks (``always_call=True``) open and close
``surrobench::module::<path>`` per module call (docs/design.md, "Kernel attribution": ``with_modules`` is
TorchScript-only, ``with_stack`` names classes). No hooks for a graph replay or a compiled module
(:func:`modules_lost`)."""

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
    """Open a ``surrobench::module::<path>`` range around every module call of ``model`` while inside."""
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
