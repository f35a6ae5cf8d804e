"""Kineto traces on a CUDA machine whose timeline answers are known in advance, analyzed by surrobench.

Cases (issue 4, "Done means"):

- ``item_sync``: a small MLP whose forward makes a data-dependent ``.item()`` check between blocks;
  expected: ``host_sync`` gaps traced to ``aten::item > aten::_local_scalar_dense``.
- ``tiny_mlp_b1``: an 8-layer MLP of width 64 at batch 1; expected: launch-bound (kernels shorter than
  their launch calls, most gap time ``launch_bound``).
- ``streams_overlap``: two side streams each running spin kernels at the same time; expected: overlap of
  about 4 x 200k cycles (~0.4 ms at 1980 MHz) per step.
- ``streams_serialized``: the same work, but stream 2 needlessly waits for stream 1; expected: almost
  no overlap and the pair reported as serialized.

Usage (needs a CUDA GPU; no orjson or nsys required)::

    python benchmarks/gpu_timelines.py --out DIR

Writes ``DIR/<case>.json.gz`` (traces), ``DIR/<case>.report.json`` and ``DIR/summary.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule

ROOT = Path(__file__).resolve().parents[1]
try:
    import surrobench  # noqa: F401
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT / "src"))

from surrobench.analysis.timeline import analyze_timeline  # noqa: E402
from surrobench.trace import load_trace  # noqa: E402

WAIT, WARMUP, ACTIVE = 1, 3, 3  # profiler schedule; the fixtures used 2/5/3


class ItemCheck(nn.Module):
    """Blocks of Linear-GELU with a data-dependent host check between them (a sync per check)."""

    def __init__(self, width: int = 256, blocks: int = 4) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(width, width), nn.GELU()) for _ in range(blocks))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
            if x.abs().max().item() > 1e3:  # data-dependent branch: the host must read the value
                x = x / 2
        return x


def tiny_mlp() -> nn.Module:
    layers = []
    for _ in range(8):
        layers += [nn.Linear(64, 64), nn.ReLU()]
    return nn.Sequential(*layers)


class TwoStreams:
    """Spin kernels on two side streams; ``serialize`` makes stream 2 wait for stream 1 first.

    ``torch.cuda._sleep`` launches a one-thread kernel that spins for a number of clock cycles (PyTorch's
    own stream tests use it): it occupies one SM, so two of them can run side by side whenever the
    streams allow it, and the expected overlap is known: ``kernels * cycles / sm_clock`` per step when
    independent, ~0 when serialized.
    """

    def __init__(self, serialize: bool, cycles: int = 200_000, kernels: int = 4) -> None:
        self.serialize, self.cycles, self.kernels = serialize, cycles, kernels
        self.s1, self.s2 = torch.cuda.Stream(), torch.cuda.Stream()
        torch.cuda.synchronize()

    def __call__(self) -> None:
        main = torch.cuda.current_stream()
        self.s1.wait_stream(main)
        self.s2.wait_stream(main)
        with torch.cuda.stream(self.s1):
            for _ in range(self.kernels):
                torch.cuda._sleep(self.cycles)
        if self.serialize:
            self.s2.wait_stream(self.s1)  # the needless dependency
        with torch.cuda.stream(self.s2):
            for _ in range(self.kernels):
                torch.cuda._sleep(self.cycles)
        main.wait_stream(self.s1)
        main.wait_stream(self.s2)


def cases() -> dict:
    torch.manual_seed(0)
    item_model = ItemCheck().cuda().eval()
    x_item = torch.randn(64, 256, device="cuda")
    mlp = tiny_mlp().cuda().eval()
    x_mlp = torch.randn(1, 64, device="cuda")
    return {
        "item_sync": lambda: item_model(x_item),
        "tiny_mlp_b1": lambda: mlp(x_mlp),
        "streams_overlap": TwoStreams(serialize=False),
        "streams_serialized": TwoStreams(serialize=True),
    }


def profile_case(fn, path: Path) -> None:
    """torch.profiler with CPU+CUDA activities, a ``forward`` range per step, synchronize per step."""
    with profile(
        activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE),
        on_trace_ready=lambda p: p.export_chrome_trace(str(path)),
    ) as prof:
        with torch.inference_mode():
            for _ in range(WAIT + WARMUP + ACTIVE):
                with record_function("forward"):
                    fn()
                torch.cuda.synchronize()
                prof.step()


def summarize(name: str, report) -> list[str]:
    lines = [f"## {name}", "", f"status: {report.status}"]
    for d in report.devices:
        lines.append(
            f"- device {d.device} ({d.name}): window {d.window_ms:.3f} ms, busy {d.busy_ms:.3f} ms "
            f"({d.busy_share:.1%}), kernel {d.kernel_ms:.3f} ms, memcpy {d.memcpy_ms:.3f} ms"
        )
    for s in report.steps:
        lines.append(
            f"- step {s.step}: host {s.dur_ms:.3f} ms, GPU busy {s.gpu_busy_ms:.3f} ms, launched {s.gpu_time_ms:.3f} ms"
        )
    if report.gaps:
        lines.append(f"- gaps > {report.gaps.threshold_us:g} us: {report.gaps.count}, {report.gaps.total_ms:.3f} ms")
        lines += [
            f"  - {c.cause}: {c.count} gaps, {c.total_ms:.3f} ms ({c.share:.0%}), top host op `{c.top_host_op}`"
            for c in report.gaps.by_cause
        ]
    if report.launches:
        lc = report.launches
        lines.append(
            f"- launches: {lc.kernels} kernels, launch call median {lc.launch_us_median:.1f} us, "
            f"kernel median {lc.kernel_us_median:.1f} us, {lc.shorter_than_launch:.0%} shorter than launch"
        )
    lines += [
        f"- stream {s.stream}: {s.ops} ops, busy {s.busy_ms:.3f} ms, overlapped {s.overlap_ms:.3f} ms"
        for s in report.streams
    ]
    lines += [f"- serialized streams {p.streams}: overlap {p.overlap_ms:.3f} ms" for p in report.serialized_streams]
    return lines + [""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("gpu_timelines.py needs a CUDA GPU")
    args.out.mkdir(parents=True, exist_ok=True)
    md = [
        "# surrobench analyze on GPU timelines",
        "",
        f"torch {torch.__version__}, {torch.cuda.get_device_name()}, CUDA {torch.version.cuda}",
        "",
    ]
    for name, fn in cases().items():
        trace = args.out / f"{name}.json.gz"
        profile_case(fn, trace)
        report = analyze_timeline(load_trace(trace))
        (args.out / f"{name}.report.json").write_text(json.dumps(report.to_dict(), indent=2))
        md += summarize(name, report)
    (args.out / "summary.md").write_text("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
