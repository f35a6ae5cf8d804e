"""Remedies: named execution settings that ``surrobench optimize`` tries, stacks and recommends, each a set of
:class:`~surrobench.execution.config.ExecConfig` field values (so every recommendation is a ``surrobench run`` line).
Remedies that set the same field exclude each other; the others stack. ``compile-reduce-overhead`` is the one way to get
compilation and graph replay together (docs/benchmarks/h200-optimize.md, "Why a compiled recipe drifted").

Sources: PyTorch docs "CUDA Graphs", ``torch.compile``, "TensorFloat-32 (TF32) on Ampere (and later) devices",
"Automatic Mixed Precision", "Channels Last Memory Format", ``cudnn.benchmark``, ``torch.set_num_threads``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

import psutil

from surrobench.execution.config import ExecConfig
from surrobench.execution.host_facts import usable_cpus


@dataclass(frozen=True)
class Remedy:
    """One remedy: its ``name`` (``"threads=1"``; stacked names join with ``+``), the ``(ExecConfig field, value)``
    ``settings`` it sets, the ``devices`` it applies to, a one-line ``summary`` and the ``code`` lines that apply it
    to a user's ``model`` and input ``x``."""

    name: str
    settings: tuple[tuple[str, object], ...]
    devices: tuple[str, ...]
    summary: str
    code: tuple[str, ...]

    def fields(self) -> set[str]:
        return {name for name, _ in self.settings}


def _autocast(dtype: str, device: str) -> tuple[str, ...]:
    return (f'with torch.autocast("{device}", dtype=torch.{dtype}):', "    y = model(x)")


_GRAPH = (
    "static_x = x.clone(); g = torch.cuda.CUDAGraph()",
    "s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())",
    "with torch.cuda.stream(s):  # warm up outside the graph",
    "    for _ in range(3): model(static_x)",
    "torch.cuda.current_stream().wait_stream(s)",
    "with torch.cuda.graph(g):",
    "    static_y = model(static_x)",
    "static_x.copy_(x); g.replay(); y = static_y  # per call",
)


def candidate_remedies(device: str, *, thorough: bool = False, precision: str | None = None) -> list[Remedy]:
    """The remedies tried on ``device``, cheapest setup first: the search measures in this order, so a budget spent
    on long compilations leaves the quick remedies measured. On the CPU the CUDA-only ones too (the feasibility rules
    say why not), on CUDA no thread counts; ``fp32`` from a reduced ``precision`` only (None: any; why:
    docs/design.md)."""
    both, cuda = ("cuda", "cpu"), ("cuda",)
    tf32_code = ("torch.backends.cuda.matmul.allow_tf32 = True", "torch.backends.cudnn.allow_tf32 = True")
    fp32_code = (*(c.replace("True", "False") for c in tf32_code if device == "cuda"), "y = model(x)  # no autocast")
    nhwc_code = (
        "model = model.to(memory_format=torch.channels_last)",
        "x = x.contiguous(memory_format=torch.channels_last)",
    )
    out = [
        Remedy("cudagraph", (("mode", "cudagraph"),), cuda, "capture the forward once, replay it as one graph", _GRAPH),
        Remedy(
            "tf32", (("precision", "tf32"),), cuda, "TF32 tensor cores for fp32 matmuls and convolutions", tf32_code
        ),
        Remedy("fp16", (("precision", "fp16"),), cuda, "fp16 autocast", _autocast("float16", device)),
        Remedy("bf16", (("precision", "bf16"),), both, "bf16 autocast", _autocast("bfloat16", device)),
        Remedy("fp32", (("precision", "fp32"),), both, "fp32 math: no autocast, TF32 off", fp32_code),
        Remedy("channels_last", (("channels_last", True),), both, "NHWC memory format for 4-D tensors", nhwc_code),
        Remedy(
            "cudnn_benchmark",
            (("cudnn_benchmark", True),),
            cuda,
            "cuDNN autotunes each convolution",
            ("torch.backends.cudnn.benchmark = True",),
        ),
    ]
    out += [
        Remedy(f"threads={n}", (("threads", n),), ("cpu",), f"{n} intra-op thread(s)", (f"torch.set_num_threads({n})",))
        for n in thread_counts()
    ]
    compiled = [
        ("compile", None, both, "torch.compile (Inductor, default mode)"),
        (
            "compile-reduce-overhead",
            "reduce-overhead",
            cuda,
            "torch.compile with CUDA graphs: the compiled forward replayed as a graph, one launch per call",
        ),
    ]
    if thorough:
        mode = "max-autotune-no-cudagraphs"
        compiled.append((f"compile-{mode}", mode, both, "torch.compile with autotuned kernels (no CUDA graphs)"))
    for name, mode, devices, summary in compiled:
        settings = (("mode", "compile"),) + ((("compile_mode", mode),) if mode else ())
        code = f'model = torch.compile(model, mode="{mode}")' if mode else "model = torch.compile(model)"
        out.append(Remedy(name, settings, devices, summary, (code,)))
    keep = [r for r in out if device == "cpu" or "cuda" in r.devices]
    return [r for r in keep if r.name != "fp32" or precision != "fp32"]


def thread_counts() -> tuple[int, ...]:
    """Thread counts tried on the CPU: 1 (no contention on a shared host), one per physical core and one per
    logical CPU of this process's affinity (:func:`~surrobench.execution.host_facts.usable_cpus`); a 16-CPU host
    with 8 SMT cores tries 1, 8 and 16."""
    logical = os.cpu_count() or 1
    usable = usable_cpus()
    per_core = max(1, logical // (psutil.cpu_count(logical=False) or logical))
    return tuple(sorted({1, max(1, usable // per_core), usable}))


def compiles(name: str) -> bool:
    """Whether the remedy or recipe named ``name`` (``"fp16+compile-reduce-overhead"``) holds a torch.compile
    remedy (each named ``compile`` or ``compile-MODE``)."""
    return any(part.startswith("compile") for part in name.split("+"))


def off_device(device: str) -> set[str]:
    """The remedies tried on ``device`` that do not run there (on the CPU, CUDA-only ones): infeasible, not judged."""
    return {r.name for r in candidate_remedies(device, thorough=True) if device not in r.devices}


@dataclass(frozen=True)
class Recipe:
    """A stack of compatible remedies, in the order they were added."""

    remedies: tuple[Remedy, ...] = ()

    @property
    def name(self) -> str:
        """``"cudagraph+tf32"``; ``"baseline"`` for the empty recipe."""
        return "+".join(r.name for r in self.remedies) or "baseline"

    @property
    def names(self) -> list[str]:
        return [r.name for r in self.remedies]

    def conflict(self, remedy: Remedy) -> Remedy | None:
        """The remedy of this recipe that sets a field ``remedy`` sets too, else None."""
        return next((r for r in self.remedies if r.fields() & remedy.fields()), None)

    def plus(self, remedy: Remedy) -> "Recipe":
        """This recipe with ``remedy`` on top.

        Raises:
            ValueError: ``remedy`` sets a field a remedy of the recipe sets (:meth:`conflict`).
        """
        clash = self.conflict(remedy)
        if clash is not None:
            raise ValueError(f"{remedy.name} and {clash.name} set the same setting")
        return Recipe(self.remedies + (remedy,))

    def swap(self, remedy: Remedy) -> "Recipe":
        """This recipe with ``remedy`` in place of those that set a setting it sets, at the first one's position
        (``cudagraph+tf32`` swapped with fp16 is ``cudagraph+fp16``); on top where none does."""
        clashes = [r for r in self.remedies if r.fields() & remedy.fields()]
        at = self.remedies.index(clashes[0]) if clashes else len(self.remedies)
        kept = [r for r in self.remedies if r not in clashes]
        return Recipe(tuple(kept[:at] + [remedy] + kept[at:]))

    def apply(self, cfg: ExecConfig) -> ExecConfig:
        """``cfg`` with every remedy's settings."""
        return replace(cfg, **{k: v for r in self.remedies for k, v in r.settings})

    def code(self) -> list[str]:
        """The lines of code that apply the recipe (one block per remedy, each headed by a comment)."""
        lines: list[str] = []
        for r in self.remedies:
            lines += [f"# {r.name}: {r.summary}", *r.code]
        return lines


def run_flags(cfg: ExecConfig) -> list[str]:
    """The ``surrobench run`` options that reproduce ``cfg``'s execution (workload options aside)."""
    flags = ["--precision", cfg.precision, "--mode", cfg.mode, "--device", cfg.device]
    if cfg.compile_mode:
        flags += ["--compile-mode", cfg.compile_mode]
    if cfg.channels_last:
        flags.append("--channels-last")
    if cfg.cudnn_benchmark:
        flags.append("--cudnn-benchmark")
    if cfg.threads is not None:
        flags += ["--threads", str(cfg.threads)]
    return flags
