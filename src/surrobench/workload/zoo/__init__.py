"""The reference surrogates (one module per family, citing its paper): a registry by CLI name, and the data
``surrobench models`` prints.
"""

from __future__ import annotations

import difflib

from surrobench.errors import UsageError
from surrobench.workload.zoo._common import count_parameters
from surrobench.workload.zoo.base import Surrogate
from surrobench.workload.zoo.deeponet import DeepONetSurrogate
from surrobench.workload.zoo.fno import FNO2dSurrogate
from surrobench.workload.zoo.meshgraphnet import MeshGraphNetSurrogate
from surrobench.workload.zoo.pinn import PINNSurrogate
from surrobench.workload.zoo.unet import UNet2dSurrogate

_REGISTRY: dict[str, type[Surrogate]] = {
    cls.info.name: cls
    for cls in (FNO2dSurrogate, UNet2dSurrogate, PINNSurrogate, DeepONetSurrogate, MeshGraphNetSurrogate)
}


def get_surrogate(name: str) -> Surrogate:
    """A new instance of the reference surrogate called ``name``.

    Raises:
        UsageError: unknown name; the message lists the known ones.
    """
    try:
        return _REGISTRY[name]()
    except KeyError:
        close = difflib.get_close_matches(name.strip().lower(), _REGISTRY, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise UsageError(
            f"unknown model {name!r}{hint}; known: {', '.join(_REGISTRY)} (or package.module:factory, "
            "path/file.py:factory, or a .pt2 file)"
        ) from None


def all_surrogates() -> list[Surrogate]:
    """One instance of every reference surrogate, in listing order."""
    return [cls() for cls in _REGISTRY.values()]


def describe(surrogate: Surrogate) -> dict[str, object]:
    """What ``surrobench models`` shows for one surrogate, JSON-ready: its :class:`ModelInfo` and ``parameters``
    (:func:`count_parameters` of a module built on the CPU)."""
    info = surrogate.info
    return {
        "name": info.name,
        "paper": info.paper,
        "layout": info.layout,
        "parameters": count_parameters(surrogate.build()),
        "point_kind": info.point_kind,
        "default_size": info.default_size,
    }
