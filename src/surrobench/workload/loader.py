"""User models (``module:factory``, ``file.py:factory``, a ``torch.export`` ``.pt2``, a model object) as
:class:`~surrobench.workload.zoo.base.Surrogate`: a bad name or file is a :class:`~surrobench.errors.UsageError`,
a failure of the user's code when it runs a :class:`~surrobench.errors.ModelError`.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import importlib
import io
import importlib.util
import inspect
import json
import logging
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import torch
from torch import nn

from surrobench.errors import ModelError, UsageError
from surrobench.workload.spec import ShapeSpec
from surrobench.workload.zoo import get_surrogate
from surrobench.workload.zoo._common import grid_points, grid_shape, randn
from surrobench.workload.zoo.base import ModelInfo, Surrogate

USER_DEFAULT_SIZE = 64  # bare size for a factory model when --shape is not given: (B, 3, 64, 64)
USER_CHANNELS = 3  # channels of the default (B, 3, N, N) input, the 2-D grid layout of docs/design.md


@functools.lru_cache(maxsize=32)
def resolve_model(spec: str, trust_pickle: bool = False) -> Surrogate:
    """The surrogate named ``spec`` (a zoo name, ``package.module:factory``, ``path/to/file.py:factory``, a ``.pt2``
    path or ``scenario:NAME``), loaded now; ``trust_pickle`` allows a ``.pt2`` that loads through pickle.

    Raises:
        UsageError: a name, module, factory or ``.pt2`` that cannot be loaded (a ``.pt2`` needing pickle too).
    """
    if spec.startswith("scenario:"):
        from surrobench.workload.scenarios import get_scenario_model  # the suite imports the workload layer

        return get_scenario_model(spec)
    if spec.endswith(".pt2"):
        return ExportedSurrogate(Path(spec), trust_pickle=trust_pickle)
    if ":" in spec:
        return FactorySurrogate.from_spec(spec)
    if spec.endswith(".py"):
        raise UsageError.bad(
            "model",
            f"{spec!r}: a Python file needs its factory, the function that returns the nn.Module: "
            f"{spec}:FACTORY (e.g. {spec}:build)",
        )
    return get_surrogate(spec)


def one_line(exc: BaseException) -> str:
    """``Type: message`` on one line."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _import_target(target: str) -> ModuleType:
    """Import a dotted module name, or a ``.py`` file under a name derived from its absolute path."""
    path = Path(target).resolve()
    if target.endswith(".py") and not path.is_file():
        raise UsageError.bad("model", f"{target}: no such file")
    try:
        if not target.endswith(".py"):
            return importlib.import_module(target)
        name = f"_surrobench_user_{path.stem}_{hashlib.sha1(str(path).encode()).hexdigest()[:8]}"
        module_spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module  # dataclasses and pickling look the module up while it executes
        try:
            module_spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        return module
    except (Exception, SystemExit) as exc:  # any error in the user's module (sys.exit too) is the user's to fix
        raise UsageError.bad("model", f"{target}: cannot import: {one_line(exc)}") from exc


class FactorySurrogate(Surrogate):
    """A model built by a user's ``factory()``; a factory or hook with a ``group`` parameter gets the process group
    (:meth:`with_group`; None in one process). Inputs: the hook ``example_inputs(batch, shape)`` (the factory's
    attribute, else the module's; ``shape`` full with batch ``batch``, or the bare size), run with the CPU RNG
    seeded from ``generator``; without one, fp32 randn of the full shape or ``(B, 3, N, N)``.
    """

    def __init__(self, spec: str, factory: Callable[..., object], hook: Callable | None) -> None:
        self._spec = spec
        self._where = f"model {spec}"
        self._factory_name = getattr(factory, "__name__", type(factory).__name__)
        self._factory = factory
        self._hook: Callable[[int, object], object] | None = hook
        self.takes_group = _has_group_parameter(factory)
        self._hook_takes_group = self._hook is not None and _has_group_parameter(self._hook)
        self._group = None
        layout = "from example_inputs(batch, shape)" if self._hook else "x: (B, 3, N, N) or the full --shape"
        self.info = ModelInfo(
            name=spec, paper="user model", layout=layout, point_kind="grid points", default_size=USER_DEFAULT_SIZE
        )

    @classmethod
    def from_spec(cls, spec: str) -> FactorySurrogate:
        """The factory named by ``spec``, with its hook; raises UsageError when it cannot be found."""
        target, _, attr = spec.rpartition(":")
        if not target or not attr:
            raise UsageError.bad("model", f"{spec}: expected package.module:factory or path/to/file.py:factory")
        module = _import_target(target)
        factory = getattr(module, attr, None)
        if not callable(factory):
            raise UsageError.bad("model", f"{spec}: module {target} has no callable {attr!r}")
        return cls(spec, factory, getattr(factory, "example_inputs", None) or getattr(module, "example_inputs", None))

    def with_group(self, group) -> FactorySurrogate:
        """A copy whose factory and hook get ``group`` where they take one."""
        bound = copy.copy(self)
        bound._group = group
        return bound

    def build(self) -> nn.Module:
        """``factory()`` (``factory(group=...)`` for a distributed factory).

        Raises:
            ModelError: the factory raises or returns no ``nn.Module``.
        """
        try:
            module = self._factory(group=self._group) if self.takes_group else self._factory()
        except UsageError:
            raise
        except (Exception, SystemExit) as exc:  # a factory calling sys.exit must not end the sweep
            raise ModelError(f"{self._where}: factory {self._factory_name}() raised {one_line(exc)}") from exc
        if not isinstance(module, nn.Module):
            raise ModelError(
                f"{self._where}: factory {self._factory_name} returned {type(module).__name__}, not an nn.Module"
            )
        return module

    def example_inputs(
        self, batch: int, shape: ShapeSpec, *, generator: torch.Generator, device: torch.device
    ) -> tuple[torch.Tensor, ...]:
        """The hook's inputs, or ``(x,)`` with ``x`` fp32 randn of the full shape or ``(B, 3, N, N)``.

        Raises:
            ModelError: the hook raises or returns something other than a tensor or tuple of tensors.
        """
        full = (batch, *shape.full[1:]) if shape.full else None
        if self._hook is None:
            dims = full or grid_shape(self._spec, batch, shape, channels=USER_CHANNELS)
            return (randn(dims, generator, device),)
        size = full or shape.size
        where = f"{self._where}: example_inputs({batch}, {size})"
        seed = int(torch.randint(2**62, (1,), generator=generator, device=generator.device))  # differs per set
        # CPU RNG only: torch.manual_seed would also queue a CUDA reseed that fork_rng(devices=[]) does not undo.
        with torch.random.fork_rng(devices=[]):
            torch.default_generator.manual_seed(seed)
            try:
                kwargs = {"group": self._group} if self._hook_takes_group else {}
                value = self._hook(batch, size, **kwargs)
            except (Exception, SystemExit) as exc:
                raise ModelError(f"{where} raised {one_line(exc)}") from exc
        items = (value,) if isinstance(value, torch.Tensor) else value
        if not isinstance(items, (tuple, list)) or not items or not all(isinstance(t, torch.Tensor) for t in items):
            raise ModelError(f"{where} returned {type(value).__name__}, not a tensor or a tuple of tensors")
        return tuple(t.to(device) for t in items)

    def points_per_sample(self, inputs: tuple[torch.Tensor, ...]) -> int | None:
        """:func:`user_grid_points` of the default input; None with an inputs hook (no declared layout)."""
        return None if self._hook is not None else user_grid_points(inputs[0])


def user_grid_points(primary: torch.Tensor) -> int | None:
    """Points per sample of a user model's input read as ``(B, C, *spatial)``: the product of the spatial dims;
    None for a tensor of rank 2 or less (one feature vector per sample: no points, so no ``points_per_s``)."""
    return grid_points(primary) if primary.dim() > 2 else None


def live_surrogate(model: nn.Module | Callable[[], nn.Module]) -> FactorySurrogate:
    """A model object given to the library, named by its class (a module, timed on a ``copy.deepcopy`` at each build)
    or ``__name__`` (a factory), the hook its ``example_inputs``; raises UsageError when neither."""
    if isinstance(model, nn.Module):
        name = type(model).__name__

        def copy_of_model() -> nn.Module:
            try:
                return copy.deepcopy(model)
            except Exception as exc:
                raise ModelError(
                    f"model {name}: cannot be copied for timing ({one_line(exc)}); pass a zero-argument "
                    "function that builds it instead"
                ) from exc

        factory = copy_of_model
    elif callable(model):
        name = getattr(model, "__name__", type(model).__name__)
        factory = model
    else:
        raise UsageError(f"model of type {type(model).__name__}: give a name, an nn.Module or a function returning one")
    return FactorySurrogate(name, factory, getattr(model, "example_inputs", None))


def _has_group_parameter(fn: Callable) -> bool:
    try:
        return "group" in inspect.signature(fn).parameters
    except (TypeError, ValueError):  # builtins and C callables without a readable signature
        return False


class _ExportedModule(nn.Module):
    """Holds ``ExportedProgram.module()``, out of ``train()``/``eval()``'s reach: its mode was fixed when traced,
    and its ``eval()`` raises (torch 2.13)."""

    def __init__(self, program_module: nn.Module) -> None:
        super().__init__()
        self.program = program_module

    def train(self, mode: bool = True) -> _ExportedModule:
        self.training = mode
        return self

    def forward(self, *inputs: torch.Tensor) -> object:
        return self.program(*inputs)


#: Archive members of pickled objects other than tensors (``torch/export/pt2_archive``: ``custom_obj_*``
#: TorchScript objects, ``opaque_obj_*`` pickles), and the AOTInductor folder (native code).
_UNSAFE_PREFIXES = ("custom_obj_", "opaque_obj_")
_NATIVE_DIRS = ("data/aotinductor/",)


def pickle_members(path: Path) -> list[str]:
    """Members of the ``.pt2`` zip that ``torch.export.load`` would unpickle in full (and so could run code):
    ``use_pickle`` or custom/opaque weights and constants, ``.pt`` members ``torch.load(weights_only=True)``
    refuses, AOTInductor native code. Raises UsageError for a file that is not a zip archive."""
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise UsageError.bad("model", f"{path}: cannot load exported program: {one_line(exc)}") from None
    found = []
    with archive:
        for name in archive.namelist():
            if any(d in name for d in _NATIVE_DIRS):
                found.append(f"{name} (native code)")
            elif name.endswith("_config.json") and ("/weights/" in name or "/constants/" in name):
                try:
                    config = json.loads(archive.read(name)).get("config", {})
                    entries = list(config.items())
                except (ValueError, AttributeError, zipfile.BadZipFile):
                    found.append(f"{name} (unreadable)")
                    continue
                found += [
                    f"{name}: {fqn}"
                    for fqn, meta in entries
                    if not isinstance(meta, dict)
                    or meta.get("use_pickle") is not False
                    or str(meta.get("path_name", "")).startswith(_UNSAFE_PREFIXES)
                ]
            elif name.endswith(".pt"):
                try:
                    torch.load(io.BytesIO(archive.read(name)), weights_only=True)
                except Exception:  # whatever the restricted unpickler refuses, torch would unpickle in full
                    found.append(name)
    return found


class ExportedSurrogate(Surrogate):
    """A saved ``torch.export`` program (``.pt2``). Inputs: randn in the stored examples' dtypes and shapes, dim 0
    the batch (a full shape for the first); non-floating inputs reused as stored; dims checked against the
    export's constraints."""

    def __init__(self, path: Path, *, trust_pickle: bool = False) -> None:
        if not path.is_file():
            raise UsageError.bad("model", f"{path}: no such file")
        unsafe = [] if trust_pickle else pickle_members(path)
        if unsafe:
            shown = ", ".join(unsafe[:3]) + (f" and {len(unsafe) - 3} more" if len(unsafe) > 3 else "")
            raise UsageError.bad(
                "model",
                f"{path}: the archive holds objects that load through pickle, which can run "
                f"code ({shown}); pass {{trust_pickle}} only if you trust where the file came from",
                others=("trust_pickle",),
            )
        # torch.export.load logs a traceback before its legacy-format fallback raises the error we report.
        export_log = logging.getLogger("torch.export")
        level = export_log.level
        export_log.setLevel(logging.ERROR)
        try:
            self._program = torch.export.load(path)
        except Exception as exc:
            raise UsageError.bad("model", f"{path}: cannot load exported program: {one_line(exc)}") from exc
        finally:
            export_log.setLevel(level)
        self._path = path
        args, kwargs = self._program.example_inputs or ((), {})
        if kwargs or not args or not all(isinstance(a, torch.Tensor) and a.dim() > 0 for a in args):
            raise UsageError.bad(
                "model",
                f"{path}: need stored positional non-scalar tensor example inputs; "
                "re-export with torch.export.export(model, (tensors,)) and no keyword inputs",
            )
        self._examples: tuple[torch.Tensor, ...] = args
        self._symbolic = self._placeholder_shapes()
        primary = self._examples[0]
        self.info = ModelInfo(
            name=str(path),
            paper="user model (torch.export)",
            layout="x: (B, " + ", ".join(map(str, primary.shape[1:])) + ")" if primary.dim() > 1 else "x: (B,)",
            point_kind="grid points",
            default_size=primary.shape[-1],
        )

    def _placeholder_shapes(self) -> list[tuple[object, ...]]:
        """Each user input's traced shape (SymInts for dynamic dims)."""
        names = set(self._program.graph_signature.user_inputs)
        return [
            tuple(node.meta["val"].shape)
            for node in self._program.graph.nodes
            if node.op == "placeholder" and node.name in names
        ]

    def _check(self, dims: tuple[int, ...], traced: tuple[object, ...], which: int) -> None:
        """UsageError unless ``dims`` satisfies the traced shape (equal static dims, dynamic dims in range)."""
        if len(dims) != len(traced):
            raise UsageError.bad(
                "model",
                f"{self._path}: input {which} has rank {len(traced)}, "
                f"shape {'x'.join(map(str, dims))} has rank {len(dims)}",
            )
        for axis, (want, got) in enumerate(zip(traced, dims)):
            if isinstance(want, int):
                if want != got:
                    raise UsageError.bad(
                        "model",
                        f"{self._path}: input {which} dim {axis} is static {want} in the export, got {got}; "
                        "re-export with a torch.export.Dim for that dim",
                    )
                continue
            bounds = self._program.range_constraints.get(want.node.expr)
            if bounds is not None and not bounds.lower <= got <= bounds.upper:
                raise UsageError.bad(
                    "model",
                    f"{self._path}: input {which} dim {axis} = {got} is outside the "
                    f"exported range [{bounds.lower}, {bounds.upper}]",
                )

    def build(self) -> nn.Module:
        return _ExportedModule(self._program.module())

    def example_inputs(
        self, batch: int, shape: ShapeSpec, *, generator: torch.Generator, device: torch.device
    ) -> tuple[torch.Tensor, ...]:
        """One tensor per program input.

        Raises:
            UsageError: a bare size other than the example's last dim, or a dim the export does not allow.
        """
        if shape.size is not None and shape.size != self.info.default_size:
            raise UsageError.bad(
                "model",
                f"{self._path}: exported at {self.info.layout}; a bare size {shape.size} "
                "cannot change that, give a full {shapes}",
                others=("shapes",),
            )
        inputs = []
        for which, (example, traced) in enumerate(zip(self._examples, self._symbolic)):
            dims = (batch, *shape.full[1:]) if which == 0 and shape.full else (batch, *example.shape[1:])
            self._check(dims, traced, which)
            if example.is_floating_point():
                inputs.append(randn(dims, generator, device, dtype=example.dtype))
            elif dims == tuple(example.shape):
                inputs.append(example.to(device))
            else:
                raise UsageError.bad(
                    "model",
                    f"{self._path}: input {which} ({example.dtype}) cannot be resized "
                    f"to {'x'.join(map(str, dims))}; use the exported batch {example.shape[0]}",
                )
        return tuple(inputs)

    def points_per_sample(self, inputs: tuple[torch.Tensor, ...]) -> int | None:
        return user_grid_points(inputs[0])
