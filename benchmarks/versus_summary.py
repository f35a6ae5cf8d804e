"""Turn ``benchmarks/gpu_versus.sh``'s folder into ``docs/benchmarks/h200-versus.md``.

Usage: ``python3 benchmarks/versus_summary.py /path/to/versus > docs/benchmarks/h200-versus.md`` (the folder the
script packs into ``versus.tar.gz``: ``versions.txt``, ``train.txt``, ``ns*.json``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from surrobench.records.versus import load_versus
from surrobench.report.versus_tables import summary_line, versus_markdown

COMMAND = "OUT=/some/dir benchmarks/gpu_versus.sh"


def _what(record, trained_at: int | None) -> str:
    """A run's heading: its grid, where its weights were trained, a rollout's length."""
    size = int(record.problem.rsplit("_", 1)[-1])
    text = f"{size}²"
    if trained_at is not None and trained_at != size:
        text += f", the {trained_at}² weights evaluated at {size}² (the FNO's resolution invariance; no training at {size}²)"
    elif trained_at is not None:
        text += f", the FNO trained at {size}²"
    if record.steps > 1:
        text += f", a {record.steps}-step rollout (error and speedup against the horizon)"
    return text


def _training(folder: Path) -> dict | None:
    """The training script's JSON summary line, None when it did not finish."""
    for line in (folder / "train.txt").read_text().splitlines() if (folder / "train.txt").is_file() else []:
        if line.startswith("{"):
            return json.loads(line)
    return None


def _train_line(t: dict | None) -> str:
    if t is None:
        return "Training: no summary (see train.txt)."
    return (
        f"Training: {t['pairs']} pairs at {t['size']}², {t['epochs']} epochs, data {t['data_s']} s + training "
        f"{t['train_s']} s; validation relative L2 {t['val_relative_l2']:.3g}."
    )


def main(folder: str) -> str:
    root = Path(folder)
    training = _training(root)
    versions = (root / "versions.txt").read_text().strip() if (root / "versions.txt").is_file() else "(missing)"
    parts = [
        "# surrobench versus on an H200: 2-D Navier–Stokes, FNO against the pseudo-spectral solver",
        "",
        f"Command: `{COMMAND}`, then `python3 benchmarks/versus_summary.py <its folder>`. "
        "What each column means: docs/versus.md.",
        "",
        "```",
        versions,
        "```",
        "",
        _train_line(training),
        "",
    ]
    logs = [p for p in root.glob("ns*.txt") if not p.stem.endswith("-png")]
    for log in sorted(logs, key=lambda p: (len(p.stem), p.stem)):
        name = log.stem
        path = root / f"{name}.json"
        if not path.is_file():
            last = [line for line in log.read_text().splitlines() if line.strip()][-2:]
            parts += [f"## {name}", "", "Not measured:", "", "```", *last, "```", ""]
            continue
        record = load_versus(path)
        what = _what(record, training["size"] if training else None)
        parts += [f"## {what}", "", "```", summary_line(record), "```", "", versus_markdown(record)]
        if any(s.crossover_step is not None for s in record.surrogates):
            parts += [f"Crossover step: {', '.join(str(s.crossover_step) for s in record.surrogates)}.", ""]
        parts += [f"![Pareto plot]({name}.png)", ""]
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    sys.stdout.write(main(sys.argv[1]))
