"""The markdown summary of ``benchmarks/gpu_multigpu.sh``: every run in its database, oldest first, with
its results table (one row per rank, the one-device reference and the step) and its scaling table.

    python3 benchmarks/multigpu_summary.py multigpu.db > summary.md
"""

from __future__ import annotations

import sys

from surrobench.report.run import results_markdown
from surrobench.report.scaling import scaling_markdown
from surrobench.results.scaling import scaling_rows
from surrobench.results.store import ResultStore


def main(db: str) -> None:
    with ResultStore(db) as store:
        for summary in reversed(store.list_runs()):
            run = store.load_run(summary.run_id)
            env = run.env
            print(
                f"## {run.tag or run.run_id}: {env.get('parallel')} on {env.get('world_size')} x "
                f"{env.get('device_name')} (run {run.run_id}, {run.created})\n"
            )
            ranks = env.get("ranks") or []
            print("ranks: " + ", ".join(f"{r['rank']} on {r['host']} {r['device_uuid'] or ''}".strip() for r in ranks))
            print(f"NCCL environment: {env.get('nccl_env')}\n")
            print(results_markdown(run.results))
            rows = scaling_rows(run.results)
            if rows:
                print(scaling_markdown(rows))


if __name__ == "__main__":
    main(sys.argv[1])
