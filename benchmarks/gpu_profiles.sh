#!/usr/bin/env bash
# Issue 3 on a CUDA machine: `surrobench profile` of fno2d and unet2d at 128/256/512, batch 1 and 8 (fp32,
# eager), op tables and the four readings written as markdown for docs/benchmarks/h200-profiles.md.
# Usage: benchmarks/gpu_profiles.sh OUT_DIR   (from the repository root)
# Writes OUT_DIR/{versions.txt, <model>.json, <model>.txt, h200-profiles.md, traces/*.json.gz, h200.db}.
set -uo pipefail
out=${1:?usage: benchmarks/gpu_profiles.sh OUT_DIR}
mkdir -p "$out"
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
{
  date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
  python3 -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
} | tee "$out/versions.txt"
for model in fno2d unet2d; do
  cmd="surrobench profile --model $model --shape 128,256,512 --batch 1,8 --precision fp32 --device cuda"
  cmd+=" --profile-wait 2 --profile-warmup 5 --profile-active 10 --top 15"
  echo "\$ $cmd" > "$out/$model.txt"
  COLUMNS=200 python3 -m $cmd --db "$out/h200.db" --trace-out "$out/traces" --json "$out/$model.json" \
    --tag "profiles-$model" 2>&1 | tee -a "$out/$model.txt"
done
python3 - "$out" <<'PY'
import json, sys
from pathlib import Path
from surrobench.report.escape import md_escape, md_table
from surrobench.report.op_tables import _pct as pct, label, op_columns, op_rows, reading_lines, summary_line


def profile_markdown(reports: list[dict], top_n: int) -> str:
    """Markdown: per profiled config a heading, the summary, the op table, category shares, the readings."""
    out = []
    for report in reports:
        out.append(f"### {md_escape(label(report), newline=' ')}\n")
        if report["status"] != "ok":
            out.append(md_escape(f"{report['status']}: {report['error']}", newline=" ") + "\n")
            continue
        table = report["op_table"]
        out += [
            md_escape(summary_line(report), newline=" ") + "\n",
            md_table(op_columns(table), op_rows(table, top_n, max_shapes=2)).rstrip("\n"),
        ]
        shares = ", ".join(f"{c} {pct(v)}" for c, v in table["category_shares"].items() if v > 0)
        out += ["", md_escape(f"Categories: {shares}.", newline=" "), ""]
        out += [md_escape(line, newline=" ") for line in reading_lines(report["readings"])] + [""]
        out += [md_escape(f"Warning: {w}", newline=" ") for w in report["warnings"]]
    return "\n".join(out) + "\n"


out = Path(sys.argv[1])
parts = ["# Op tables on the H200 (surrobench profile)\n", "```", (out / "versions.txt").read_text().strip(), "```\n"]
for model in ("fno2d", "unet2d"):
    doc = json.loads((out / f"{model}.json").read_text())
    first = (out / f"{model}.txt").read_text().splitlines()[0]
    parts += [f"## {model}\n", f"Command: `{first.lstrip('$ ')}`\n", profile_markdown(doc["profiles"], top_n=15)]
(out / "h200-profiles.md").write_text("\n".join(parts))
print(f"wrote {out / 'h200-profiles.md'}")
PY
