"""The measured-advice table of docs/benchmarks/h200-measured-advice.md from the work folder of
``benchmarks/gpu_measured_advice.sh``.

    python benchmarks/measured_advice_summary.py WORK [OPT_FOLDER]

``WORK`` holds ``diagnose_NAME.json`` (diagnosis-v6, defaults), ``diagnose_NAME_counters.json`` (with
``--counters``), ``diagnose_NAME_recipe.json`` (the recipe step), ``opt_NAME.json`` (optimize, where run) and
``times*.tsv`` (each step's wall seconds and exit code, one file per call). ``OPT_FOLDER`` (tests/fixtures/h200) holds optimize reports kept from earlier calls (``opt-*.json.gz``),
matched to a diagnosis by config label where this call ran no optimize, and only on a device of the same name
(a call that lands on H100s has no kept recipes: optimize every config there).

Per config: the top finding (the first of the ranked list: measured savings first), its measured remedy and
saving, optimize's recipe and what optimize measured for that same remedy (its candidate of exactly those remedies:
the saving ``baseline_ms * (1 - 1 / speedup)`` in its own window), diagnose's wall time with and without
``--counters``; then the goals, pass or fail per config:

- the top finding's measured remedy is in optimize's recipe (the recipe applies every execution setting it applies,
  :func:`in_the_recipe`: compile is in compile-reduce-overhead+tf32), or
  neither diagnose nor optimize measured any setting faster, or the two are a tie by the paired rule
  (:func:`tied`: the remedy's speedup interval, optimize's own measurement of it where optimize timed it, else
  diagnose's, does not clear the recipe's by the rule's margin, ``records/paired.py``; the row says "tie"), or
  the recipe holds an alternative of it (a remedy setting the same execution setting, ``Recipe.conflict``: fp16
  for bf16, cudagraph for compile-reduce-overhead) that this diagnosis measured too and that ties with it by the
  same test (:func:`alternative_tied`; the row says "tie with the alternative");
- its saving is within 25% of what optimize measured for that remedy;
- diagnose takes at most 90 s with its defaults, at most 150 s with ``--counters``.

Then the recipe steps (``diagnose_NAME_recipe.json``: optimize's recipe diagnosed with ``--counters``): the share of
its kernel time attributed to ops (after matching against the eager step) and its time against its roofline bound.
``--recipe-args WORK OPT_FOLDER NAME [EXTRA...]`` prints the diagnose arguments of that step instead (exit 1 with
the reason when there is no recipe).

Last, the estimator-error table: for every finding whose estimate (``estimated_gain_ms``) stands beside a
measured saving (``gain.kind`` measured), estimate over measurement, per finding kind (the estimator) and remedy.
"""

from __future__ import annotations

import gzip
import json
import re
import statistics
import sys
from pathlib import Path

from surrobench.execution.remedies import Recipe, candidate_remedies
from surrobench.records.vocab import remedy_id
from surrobench.records.paired import MIN_EFFECT

#: The goals of the table (docs/benchmarks/h200-measured-advice.md, "Goals").
SAVING_WITHIN = 0.25
DIAGNOSE_S = 90.0
COUNTERS_S = 150.0


def _load(path: Path) -> dict:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return json.load(f)


def _ids(name: str) -> set[str]:
    """The remedy ids of a candidate or recipe name (``tf32+threads=4``: tf32, threads)."""
    return {remedy_id(part) for part in name.split("+")}


def _times(work: Path) -> dict[tuple[str, str], tuple[float | None, str]]:
    out = {}
    for path in sorted(work.glob("times*.tsv")):  # one per call (times-START.tsv)
        for line in path.read_text().splitlines()[1:]:
            name, step, seconds, rc = (line.split("\t") + ["", "", "", ""])[:4]
            out[(name, step)] = (float(seconds) if seconds else None, rc)
    return out


def _optimized(work: Path, kept: Path | None, device_name: str | None = None) -> dict[str, dict]:
    """``{config label: optimize config object}``: this call's reports over the kept ones; with ``device_name``,
    only kept reports measured on a device of that name (an H100's diagnosis is not held against H200 recipes)."""
    found = {}
    paths = sorted(kept.glob("opt-*.json*")) if kept and kept.exists() else []
    for path in [*paths, *sorted(work.glob("opt_*.json"))]:
        try:
            doc = _load(path)
            if device_name and path.parent != work and doc["env"].get("device_name") != device_name:
                continue
            for cfg in doc["configs"]:
                found[cfg["label"]] = cfg
        except (OSError, ValueError, KeyError):
            continue
    return found


def _label(doc: dict) -> str | None:
    return next((f["config"] for f in doc["findings"] if f.get("config")), None)


def _opt_saving(opt: dict, remedy: str) -> tuple[float | None, float | None]:
    """optimize's speedup and saving (ms per step) for the candidate of exactly ``remedy``'s remedies."""
    wanted = _ids(remedy)
    for c in opt.get("candidates", []):
        sp = (c.get("speedup") or {}).get("median")
        if sp and _ids(c["name"]) == wanted:
            base = c.get("baseline_ms") or opt["baseline"].get("median_ms")
            return sp, base * (1 - 1 / sp) if base else None
    return None, None


def _recipe(opt: dict | None) -> str:
    if not opt:
        return "-"
    if not opt.get("recommended"):
        return "nothing faster"
    sp = (opt.get("recipe") or {}).get("speedup")
    return "+".join(opt["recommended"]) + (f" {sp['median']:.2f}x" if sp else "")


def _interval(d: dict | None) -> tuple[float, float] | None:
    ci = (d or {}).get("ci95")
    return (float(ci[0]), float(ci[1])) if ci else None


def tied(remedy: tuple[float, float] | None, recipe: tuple[float, float] | None, noise: float = 0.0) -> bool:
    """Whether two speedup intervals (95%, over the same baseline config) are not distinguishable by the paired
    rule's margin ``m`` (the larger of ``MIN_EFFECT`` and ``noise``, records/paired.py): neither's lower end clears
    the other's upper end x (1 + m). An approximation of the rule, which judges paired rounds: the two intervals
    come from different windows. False when either is missing."""
    if remedy is None or recipe is None:
        return False
    m = 1.0 + max(MIN_EFFECT, noise)
    return remedy[0] <= recipe[1] * m and recipe[0] <= remedy[1] * m


def _settings(name: str) -> set | None:
    """The execution settings (``(field, value)``) a candidate name applies (``execution/remedies.Remedy``), None
    where a part is not a remedy of a CUDA device (a thread count)."""
    known = {r.name: r for r in candidate_remedies("cuda", thorough=True)}
    parts = name.split("+")
    return set().union(*(known[p].settings for p in parts)) if all(p in known for p in parts) else None


def in_the_recipe(remedy: str, recommended: list[str]) -> bool:
    """Whether the recipe ``recommended`` applies every setting ``remedy`` applies: compile (mode compile) is in
    compile-reduce-overhead+tf32 (mode compile, compile mode reduce-overhead, precision tf32), cudagraph (mode
    cudagraph) is not; by remedy ids where a name is not a CUDA remedy."""
    mine, theirs = _settings(remedy), _settings("+".join(recommended)) if recommended else set()
    if mine is None or theirs is None:
        return _ids(remedy) <= _ids("+".join(recommended) or "-")
    return mine <= theirs


def alternative_tied(doc: dict, remedy: str, recommended: list[str]) -> str | None:
    """The single remedy of the recipe ``recommended`` that sets an execution setting ``remedy`` (a single) sets
    too (``execution/remedies.Recipe.conflict``: bf16 for fp16) and whose speedup this diagnosis ``doc`` measured
    tied with ``remedy``'s (:func:`tied`, both intervals from this diagnosis: two measurements of exclusive
    alternatives that it cannot order), else None."""
    known = {r.name: r for r in candidate_remedies("cuda", thorough=True)}
    mine = {m["remedy"]: m for f in doc["findings"] for m in f.get("measured", []) if m.get("speedup") is not None}
    if remedy not in known or remedy not in mine:
        return None
    for other in recommended:
        if other in known and other in mine and Recipe((known[remedy],)).conflict(known[other]):
            if tied(_interval(mine[remedy]), _interval(mine[other]), mine[other].get("noise_floor") or 0.0):
                return other
    return None


def _opt_interval(opt: dict, remedy: str) -> tuple[float, float] | None:
    """optimize's own interval for the candidate of exactly ``remedy``'s remedies, if it timed one."""
    wanted = _ids(remedy)
    return next((_interval(c.get("speedup")) for c in opt.get("candidates", []) if _ids(c["name"]) == wanted), None)


def _recipe_label(doc: dict, cut: bool) -> str | None:
    """The recipe step's config label in a recipe diagnosis: the one whose mode is not eager, else the only one
    (a recipe of the eager mode), unless the step was ``cut`` (its eager config is not the recipe)."""
    labels = list((doc.get("context") or {}).get("evidence_checks") or {})
    eager = [lb for lb in labels if re.search(r" eager(\(| |$)", lb)]
    return next((lb for lb in labels if lb not in eager), labels[0] if len(labels) == 1 and not cut else None)


def recipe_step(doc: dict | None, cut: bool = False) -> dict:
    """The recipe step's ``coverage`` (kernel time attributed to ops, after matching against the eager step where
    it was profiled), ``headroom`` (step over roofline bound, x), ``step_ms``, ``bound_ms`` and
    ``covered_share`` (of the kernel time with counters); empty without a recipe diagnosis."""
    if not doc:
        return {}
    label = _recipe_label(doc, cut)
    ctx = doc.get("context") or {}
    check = (ctx.get("evidence_checks") or {}).get(label) or {}
    head = (ctx.get("headroom") or {}).get(label) or {}
    return {
        "label": label,
        "coverage": check.get("coverage"),  # after matching against the eager step (matched_coverage, part of it)
        "headroom": head.get("headroom"),
        "step_ms": head.get("step_ms"),
        "bound_ms": head.get("roofline_bound_ms"),
        "covered_share": head.get("covered_share"),
    }


def recipe_args(work: Path, kept: Path | None, name: str, extra: list[str]) -> list[str]:
    """The ``surrobench diagnose`` arguments of config ``name``'s recipe step: optimize's ``run_command`` (this
    call's report, else the kept one of the same label) with ``--mode eager,MODE`` (the eager step beside it, to
    match its replayed kernels against) and ``extra``.

    Raises:
        LookupError: no diagnosis or optimize report of ``name``, or optimize found nothing faster.
    """
    own = work / f"opt_{name}.json"
    if own.exists():
        opt = _load(own)["configs"][0]
    else:
        diagnosed = work / f"diagnose_{name}.json"
        doc = _load(diagnosed) if diagnosed.exists() else {"findings": [], "context": {}}
        label = _label(doc)
        opt = _optimized(work, kept, doc["context"].get("device_name")).get(label) if label else None
    if not opt:
        raise LookupError(f"{name}: no optimize report")
    command = ((opt.get("recipe") or {}).get("run_command") or "").split()
    if not opt.get("recommended") or command[:2] != ["surrobench", "run"]:
        raise LookupError(f"{name}: optimize found nothing faster")
    args = command[2:]
    if "--mode" in args and args[args.index("--mode") + 1] != "eager":
        args[args.index("--mode") + 1] = "eager," + args[args.index("--mode") + 1]
    return args + extra


def rows(work: Path, kept: Path | None) -> list[dict]:
    """One row per ``diagnose_NAME.json`` in ``work`` (module docstring)."""
    times = _times(work)
    out = []
    for path in sorted(work.glob("diagnose_*.json")):
        if path.stem.endswith(("_counters", "_recipe")):
            continue
        name = path.stem.removeprefix("diagnose_")
        doc = _load(path)
        label = _label(doc)
        optimized = _optimized(work, kept, (doc.get("context") or {}).get("device_name"))
        top = doc["findings"][0] if doc["findings"] else None
        gain = (top or {}).get("gain") or {}
        remedy = gain.get("remedy") if gain.get("kind") == "measured" else None
        measured = next((m for m in top["measured"] if m["remedy"] == remedy), None) if remedy else None
        opt = optimized.get(label)
        opt_speedup, opt_saved = _opt_saving(opt, remedy) if opt and remedy else (None, None)
        # both found no setting faster: they agree
        in_recipe = bool(opt and (in_the_recipe(remedy, opt["recommended"]) if remedy else not opt["recommended"]))
        tie: bool | str = False
        if opt and remedy and not in_recipe and opt.get("recommended"):
            recipe_sp = (opt.get("recipe") or {}).get("speedup") or {}
            mine = _opt_interval(opt, remedy) or _interval(measured)
            tie = tied(mine, _interval(recipe_sp), recipe_sp.get("noise_floor") or 0.0)
            alternative = alternative_tied(doc, remedy, opt["recommended"])
            tie = f"tie with {alternative}" if alternative and not tie else tie
        within = (
            abs(measured["saved_ms"] - opt_saved) <= SAVING_WITHIN * abs(opt_saved) if measured and opt_saved else None
        )
        diag_s = times.get((name, "diagnose"), (None, ""))[0]
        counters_s = times.get((name, "counters"), (None, ""))[0]
        checks = {
            "in recipe": (in_recipe or tie) if opt else None,
            "within 25%": within,
            f"<= {DIAGNOSE_S:g} s": diag_s <= DIAGNOSE_S if diag_s is not None else None,
            f"--counters <= {COUNTERS_S:g} s": counters_s <= COUNTERS_S if counters_s is not None else None,
        }
        out.append(
            {
                "name": name,
                "label": label,
                "top": f"{top['kind']} ({top['severity']})" if top else "no findings",
                "measured": measured["text"] if measured else ("no remedy measured faster" if top else "-"),
                "recipe": _recipe(opt),
                "opt_remedy": f"{opt_speedup:.2f}x, saves {opt_saved:.3g} ms" if opt_saved else "-",
                "diagnose_s": diag_s,
                "counters_s": counters_s,
                "checks": checks,
                "tie": tie,
                "recipe_step": recipe_step(
                    _load(p) if (p := work / f"diagnose_{name}_recipe.json").exists() else None,
                    cut=times.get((name, "recipe"), (None, "0"))[1] not in ("0", ""),
                ),
                "pass": all(v is not False for v in checks.values()) and opt is not None,
                "doc": doc,
            }
        )
    return out


def estimator_rows(docs: list[dict]) -> list[tuple[str, str, float, float]]:
    """(finding kind, measured remedy, estimate ms, measured ms) of every finding whose estimate stands beside a
    measured saving."""
    out = []
    for doc in docs:
        for f in doc["findings"]:
            gain = f.get("gain") or {}
            if gain.get("kind") == "measured" and f.get("estimated_gain_ms") is not None and gain.get("ms"):
                out.append((f["kind"], gain.get("remedy") or "-", f["estimated_gain_ms"], gain["ms"]))
    return out


def _s(x: float | None) -> str:
    return "-" if x is None else f"{x:.0f}"


def _mark(v: bool | None) -> str:
    return "-" if v is None else ("pass" if v else "FAIL")


def main(work: str, kept: str | None = None) -> None:
    table = rows(Path(work), Path(kept) if kept else None)
    for versions in sorted(Path(work).glob("versions*.txt")):  # one per call
        print("```\n" + versions.read_text().strip() + "\n```\n")
    print(
        "| config | top finding | its measured remedy | optimize's recipe | optimize, that remedy | diagnose s | "
        "--counters s | goals |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in table:
        goals = ", ".join(f"{k} {_mark(v)}" for k, v in r["checks"].items())
        tie = r["tie"] if isinstance(r["tie"], str) else "tie"
        goals = goals.replace("in recipe pass", f"in recipe pass ({tie})") if r["tie"] else goals
        print(
            f"| {r['label'] or r['name']} | {r['top']} | {r['measured']} | {r['recipe']} | {r['opt_remedy']} | "
            f"{_s(r['diagnose_s'])} | {_s(r['counters_s'])} | {'PASS' if r['pass'] else 'FAIL'}: {goals} |"
        )
    print()
    for r in table:
        print(f"{r['name']}: {'PASS' if r['pass'] else 'FAIL'}")
    steps = [(r, r["recipe_step"]) for r in table if r["recipe_step"]]
    if steps:
        print("\n### The recipe step: coverage and roofline headroom\n")
        print(
            "| config | recipe step | coverage (kernel time attributed to ops) | step ms | roofline bound ms | "
            "step / bound | kernel time with counters |"
        )
        print("|---|---|---|---|---|---|---|")
        for r, st in steps:
            cov, share = st["coverage"], st["covered_share"]
            head = f"{st['headroom']:.2f}x" if st["headroom"] else "-"
            step_ms = "-" if st["step_ms"] is None else f"{st['step_ms']:.3g}"
            bound_ms = "-" if st["bound_ms"] is None else f"{st['bound_ms']:.3g}"
            print(
                f"| {r['name']} | {st['label'] or 'cut before its recipe config was profiled'} | {'-' if cov is None else f'{cov:.0%}'} | {step_ms} | {bound_ms} | "
                f"{head} | {'-' if share is None else f'{share:.0%}'} |"
            )
    est = estimator_rows([r["doc"] for r in table])
    if not est:
        return
    print("\n### Estimator error: estimate over measured saving\n")
    print("| finding kind (estimator) | remedy measured | n | estimate / measured: median | range |")
    print("|---|---|---|---|---|")
    groups: dict[tuple[str, str], list[float]] = {}
    for kind, remedy, estimate, measured in est:
        groups.setdefault((kind, "+".join(sorted(_ids(remedy)))), []).append(estimate / measured)
    for (kind, remedy), ratios in sorted(groups.items()):
        print(
            f"| {kind} | {remedy} | {len(ratios)} | {statistics.median(ratios):.2f} | "
            f"{min(ratios):.2f}-{max(ratios):.2f} |"
        )
    print("\n| config | finding kind | remedy | estimate ms | measured ms |")
    print("|---|---|---|---|---|")
    for r in table:
        for kind, remedy, estimate, measured in estimator_rows([r["doc"]]):
            print(f"| {r['name']} | {kind} | {remedy} | {estimate:.3f} | {measured:.3f} |")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--recipe-args"]:
        try:
            print(" ".join(recipe_args(Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4], sys.argv[5:])))
        except (LookupError, OSError, ValueError, KeyError) as exc:
            sys.exit(f"no recipe step: {exc}")
    else:
        main(*sys.argv[1:3])
