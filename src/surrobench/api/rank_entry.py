"""The program each rank runs under ``surrobench run --nproc N`` (started by torchrun, see
:func:`surrobench.api.distributed.launch`)::

    python -m torch.distributed.run --standalone --nproc_per_node N -m surrobench.api.rank_entry \\
        --request REQUEST.json --parallel replicas --db surrobench.db --run-id-out RUN_ID [--command TEXT]

Rank 0 writes the stored run's id to ``RUN_ID`` once the run is complete. A usage error on any rank is one
line on stderr and exit code 2, as at the CLI's edge.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from surrobench.api.distributed import run_on_ranks
from surrobench.errors import UsageError
from surrobench.execution.ranks import detect_rank_env
from surrobench.execution.sweep import SweepRequest, plan_sweep


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="surrobench.api.rank_entry")
    parser.add_argument("--request", type=Path, required=True)
    parser.add_argument("--parallel", required=True)
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--run-id-out", type=Path, required=True)
    parser.add_argument("--command", default="")
    args = parser.parse_args(argv)
    try:
        env = detect_rank_env()
        if env is None:
            raise UsageError("surrobench.api.rank_entry runs under torchrun or srun with more than one rank")
        plan = plan_sweep(SweepRequest.from_json(json.loads(args.request.read_text())))
        record = run_on_ranks(plan, args.parallel, args.db, env, command=args.command or None)
    except UsageError as exc:
        print(f"surrobench: error: {exc}", file=sys.stderr)
        return 2
    if record is not None:
        args.run_id_out.write_text(record.run_id + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
