"""Optimize reports in the results database (``optimizations``, ``optimize_configs``): stored as each candidate is
judged, read back as the current version (:meth:`~surrobench.results.optimize.OptimizeReport.from_json`)."""

from __future__ import annotations

import json

from surrobench.records import schemas
from surrobench.records.run import ConfigResult
from surrobench.records.serve import CapacityOptimization
from surrobench.errors import UsageError
from surrobench.results.optimize import CONFIGS, OptimizeReport, config_from_json
from surrobench.results.store import ABANDONED, ResultStore, RunSummary, named, prefix_pattern

#: The tag of an optimization's baseline run is its own tag with this suffix (``tune.plans``: ``TAG:baseline``,
#: ``optimize:baseline`` when none was given).
_BASELINE_TAG = ":baseline"


def add_optimization(store: ResultStore, report: dict) -> None:
    """Store an optimize report (``OptimizeReport.to_json()``) and index its configs, or a capacity optimization
    (``CapacityOptimization.to_json()``: no configs, its two serve runs in the run-id columns, ``''`` for a baseline
    not verified); a report stored before under the same id is replaced (optimize stores its report as each
    candidate is judged, marked interrupted until the last write, so a killed search leaves what it judged)."""
    runs = (report["baseline_run_id"] or "", report.get("recipe_run_id", report.get("top_run_id")))
    head = (report["optimize_id"], report["created"], *runs, json.dumps(report))
    configs = [
        (c["model"], json.dumps(c["input_shape"]), c["batch"], c["device"], json.dumps(c))
        for c in report.get("configs", ())
    ]
    store.replace("optimizations", head, "optimize_configs", configs, key="optimize_id")


def _optimization(store: ResultStore, report_json: str) -> dict:
    """A stored optimization of any version, read by its ``schema`` (capacity-v1 through
    :meth:`CapacityOptimization.from_json`, else :meth:`OptimizeReport.from_json`) and written as the current one.

    Raises:
        UsageError: the row is not a valid capacity-v1 or optimize-v3 (or v2, v1) document; the message names the
            bad key.
    """
    with store._reading("an optimization"):
        doc = json.loads(report_json)
        record = CapacityOptimization if doc.get("schema") == schemas.CAPACITY else OptimizeReport
        return record.from_json(doc).to_json()


def find_optimization(store: ResultStore, optimize_id: str) -> dict | None:
    """The stored optimization ``optimize_id`` (an optimize report or a capacity optimization, any version,
    checked, as :func:`_optimization` writes it; a unique prefix is accepted), or None when none matches.

    Raises:
        UsageError: several optimizations match; the row is not a valid document (:func:`_optimization`).
    """
    rows = named(
        store.conn,
        "SELECT report_json FROM optimizations WHERE optimize_id LIKE ? ESCAPE '\\'",
        (prefix_pattern(optimize_id),),
    ).fetchall()
    if len(rows) > 1:
        raise UsageError(f"{len(rows)} optimizations in {store.path!r} match id {optimize_id!r}")
    return _optimization(store, rows[0]["report_json"]) if rows else None


def optimizations_of_runs(store: ResultStore, run_ids: list[str]) -> list[dict]:
    """The optimize reports (checked; no capacity optimization) that stored any of ``run_ids`` as their baseline or
    recipe run, oldest first.

    Raises:
        UsageError: a report is not a valid optimize document.
    """
    marks = ", ".join("?" * len(run_ids))
    rows = named(
        store.conn,
        f"SELECT report_json FROM optimizations WHERE (baseline_run_id IN ({marks}) OR recipe_run_id IN ({marks}))"
        " AND json_extract(report_json, '$.schema') IS NOT ? ORDER BY created",
        (*run_ids, *run_ids, schemas.CAPACITY),
    ).fetchall()
    return [_optimization(store, row["report_json"]) for row in rows]


def optimized_configs(store: ResultStore, result: ConfigResult) -> list[dict]:
    """The optimize config objects stored whose baseline ran (``ok``; a factory that raised measured nothing) the config
    ``result`` as it ran (:meth:`~surrobench.records.run.ConfigResult.same_config`), of optimizations that finished,
    newest first; each checked as a config of its report's schema (:data:`~surrobench.results.optimize.CONFIGS`),
    written as optimize-v3 with its optimization's ``optimize_id`` and ``tolerance``.

    Raises:
        UsageError: a stored config object of this workload is not a valid one.
    """
    rows = store.conn.execute(
        "SELECT c.config_json, json_extract(o.report_json, '$.schema'), o.optimize_id,"
        " json_extract(o.report_json, '$.tolerance') FROM optimize_configs c"
        " JOIN optimizations o ON o.optimize_id = c.optimize_id"
        " WHERE c.model = ? AND c.input_shape_json = ? AND c.batch = ? AND c.device = ?"
        " AND json_extract(o.report_json, '$.interrupted') IS NOT 1 ORDER BY o.created DESC",
        (result.model, json.dumps(list(result.input_shape)), result.batch, result.device),
    )
    found = []
    for config_json, schema, optimize_id, tolerance in rows:
        with store._reading("an optimization"):
            entry = json.loads(config_json)
            schemas.check(entry, CONFIGS, schema, "config")
        optimization = config_from_json(entry)
        if optimization.baseline.status == "ok" and optimization.baseline.same_config(result):
            found.append(optimization.to_json() | {"optimize_id": optimize_id, "tolerance": tolerance})
    return found


def optimization_summaries(
    store: ResultStore, model: str | None = None, tag: str | None = None, since: str | None = None
) -> list[RunSummary]:
    """The stored optimizations as ``history`` lines (kind ``optimize``), newest first, filtered as
    :meth:`~surrobench.results.store.ResultStore.list_runs` filters runs (``tag`` the optimization's own, from its
    baseline run's ``TAG:baseline``); ``n_failed`` the configs whose baseline failed; ``state`` as
    :func:`optimization_state` reads it. A capacity optimization is one config
    (its ``workload``), on its baseline serve run's device: failed when its baseline failed (its first candidate has
    no accuracy verdict), else ``interrupted`` when it decided no recipe.

    Raises:
        UsageError: a stored row is not a valid document (:func:`_optimization`).
    """
    rows = store.conn.execute(
        "SELECT o.report_json, r.tag, json_extract(r.env_json, '$.device_name') FROM optimizations o"
        " LEFT JOIN runs r ON r.run_id = o.baseline_run_id WHERE (? IS NULL OR o.created >= ?)"
        " AND (? IS NULL OR o.optimize_id IN (SELECT optimize_id FROM optimize_configs WHERE model = ?)"
        " OR json_extract(o.report_json, '$.workload.model') = ?) ORDER BY o.created DESC",
        (since, since, model, model, model),
    ).fetchall()
    summaries = []
    for report_json, baseline_tag, device_name in rows:
        doc = _optimization(store, report_json)
        if doc["schema"] == schemas.CAPACITY:
            failed = doc["recipe"] is None and doc["candidates"][:1] and doc["candidates"][0]["accurate"] is None
            doc |= {
                "configs": [doc["workload"] | {"error": "the baseline failed"} if failed else doc["workload"]],
                "env": {"device_name": device_name},
                "interrupted": doc["recipe"] is None and not failed,
            }
        own_tag = baseline_tag[: -len(_BASELINE_TAG)] if (baseline_tag or "").endswith(_BASELINE_TAG) else None
        own_tag = None if own_tag == "optimize" else own_tag  # the default when no tag was given
        if tag is not None and own_tag != tag:
            continue
        configs = doc["configs"]
        summaries.append(
            RunSummary(
                run_id=doc["optimize_id"],
                created=doc["created"],
                tag=own_tag,
                device_name=doc["env"].get("device_name"),
                models=tuple(sorted({c["model"] for c in configs})),
                n_configs=len(configs),
                n_failed=sum(1 for c in configs if c.get("error")),
                n_recipes=sum(1 for c in configs if c.get("recommended", doc.get("recipe"))),  # capacity: recipe
                state=optimization_state(store, doc),
                kind="optimize",
            )
        )
    return summaries


def optimization_state(store: ResultStore | None, doc: dict) -> str:
    """How the optimization ``doc`` stands, as ``history`` lists it: ``complete``; one not finished (``interrupted`` in
    it) its baseline run's state in ``store`` (begun first, finished with the last write) where that is ``running`` or
    ``abandoned``, else (``store`` None, or without that run) ``interrupted``."""
    state = (store and store.run_state(doc["baseline_run_id"])) if doc.get("interrupted") else "complete"
    return state if state in ("complete", "running", ABANDONED) else "interrupted"
