"""One torch.compile cache for an ``optimize`` call and its fresh processes, which then load the kernels the search
compiled (Dynamo still traces): :func:`shared_compile_cache` turns on TorchInductor's on-disk FX-graph, AOTAutograd
(torch >= 2.5) and local autotune caches under ``TORCHINDUCTOR_CACHE_DIR`` (PyTorch tutorial "Compile Time Caching
Configuration"), :func:`cache_env` gives every child the same. What the user set is kept;
``TORCHINDUCTOR_FORCE_DISABLE_CACHES=1`` turns it all off (why not ``save_cache_artifacts``: docs/design.md).
"""

from __future__ import annotations

import getpass
import os
import re
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager

#: The cache switches a child gets unless the environment sets them (1: on).
CACHE_SWITCHES = {"TORCHINDUCTOR_FX_GRAPH_CACHE": "1", "TORCHINDUCTOR_AUTOGRAD_CACHE": "1"}
#: Setting this to 1 turns every Inductor cache off (torch/_inductor/config.py); then nothing is shared.
FORCE_DISABLE = "TORCHINDUCTOR_FORCE_DISABLE_CACHES"


def inductor_cache_dir(environ: Mapping[str, str]) -> str:
    """``TORCHINDUCTOR_CACHE_DIR``, else torch's default ``<tmp>/torchinductor_<user>``
    (``cache_dir_utils.default_cache_dir``, its rule repeated for torch < 2.5)."""
    given = environ.get("TORCHINDUCTOR_CACHE_DIR")
    if given:
        return os.path.abspath(given)
    try:
        from torch._inductor.runtime.cache_dir_utils import default_cache_dir

        return os.path.abspath(default_cache_dir())
    except ImportError:  # torch 2.4: runtime_utils.cache_dir, same rule
        user = re.sub(r'[\\/:*?"<>|]', "_", getpass.getuser())
        return os.path.join(tempfile.gettempdir(), "torchinductor_" + user)


def cache_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables a fresh process gets to share the cache of the process with ``environ`` (each unless set
    there); ``{}`` when ``environ`` turns the caches off (:data:`FORCE_DISABLE`)."""
    if environ.get(FORCE_DISABLE) == "1":
        return {}
    out = {"TORCHINDUCTOR_CACHE_DIR": inductor_cache_dir(environ)}
    out.update({name: value for name, value in CACHE_SWITCHES.items() if name not in environ})
    return out


@contextmanager
def shared_compile_cache() -> Iterator[dict[str, str]]:
    """For the block, this process compiles into the cache of :func:`cache_env` with its variables in the
    environment (children inherit them); yields them."""
    added = {k: v for k, v in cache_env(os.environ).items() if os.environ.get(k) != v}
    saved = {k: os.environ.get(k) for k in added}
    os.environ.update(added)
    try:
        with ExitStack() as patches:
            # config.patch turns the caches on in modules already imported (which read the environment at import)
            if os.environ.get(FORCE_DISABLE) != "1":
                inductor = sys.modules.get("torch._inductor.config")
                if inductor is not None:
                    wanted = {"fx_graph_cache": True, "autotune_local_cache": True}
                    patches.enter_context(inductor.patch({k: v for k, v in wanted.items() if hasattr(inductor, k)}))
                functorch = sys.modules.get("torch._functorch.config")
                if functorch is not None and hasattr(functorch, "enable_autograd_cache"):
                    patches.enter_context(functorch.patch(enable_autograd_cache=True))
            yield cache_env(os.environ)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
