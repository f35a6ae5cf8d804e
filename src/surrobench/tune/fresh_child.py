"""One fresh process of ``optimize`` (:mod:`surrobench.tune.fresh`), measuring one config as ``surrobench run``
does, the config given as JSON (:meth:`ExecConfig.to_json <surrobench.records.schemas.Plain.to_json>`)::

    python -m surrobench.tune.fresh_child --config CONFIG.json --db DB --json RUN.json --tag TAG

Exit codes as ``surrobench run``: 0, 2 for bad input (one line on stderr), 3 when the config failed (its run is
written), 130 on Ctrl-C (what finished is stored as interrupted and written).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from surrobench.errors import UsageError
from surrobench.execution.config import ExecConfig, request_fields
from surrobench.execution.sweep import SweepInterrupted, SweepRequest, execute_sweep, plan_sweep
from surrobench.results.store import ResultStore


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m surrobench.tune.fresh_child")
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--tag")
    args = parser.parse_args(argv)
    try:
        cfg = ExecConfig.from_json(json.loads(args.config.read_text()))
        one = dict(models=(cfg.model,), shapes=(cfg.shape,), batches=(cfg.batch,), precisions=(cfg.precision,))
        sweep = SweepRequest(
            **one,
            modes=(cfg.mode,),
            input_sets=cfg.input_sets,
            tag=args.tag,
            trust_pickle=cfg.trust_pickle,
            **request_fields(cfg),
        )
        plan = plan_sweep(sweep)
    except (OSError, ValueError, KeyError, TypeError, UsageError) as exc:
        print(f"error: {args.config}: {exc}", file=sys.stderr)
        return 2
    with ResultStore(args.db) as store:
        try:
            record, _ = execute_sweep(plan, store)
        except SweepInterrupted as cut:  # stored as interrupted; its JSON written too
            args.json.write_text(json.dumps(cut.record.to_json()))
            return 130
    args.json.write_text(json.dumps(record.to_json()))
    return 0 if all(r.status == "ok" for r in record.results) else 3


if __name__ == "__main__":
    sys.exit(main())
