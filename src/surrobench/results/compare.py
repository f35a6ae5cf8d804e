"""A/B comparison of two runs (docs/sources.md, method §5; docs/compare.md): median latency, P95, peak memory and
top-op share side by side, configs matched by :meth:`ConfigResult.key`, each latency ratio NEW/BASE (1.05 = 5%
slower, the speedup's inverse) with a bootstrap 95% interval, judged by the one rule for "faster"
(:mod:`surrobench.records.paired`, docs/design.md "Faster": two separate runs drawn each on its own; the runs
``optimize`` stored, timed together, as the pair they are, ``extra["paired_units"]``). With the rule's smallest
effect set to ``threshold``, NEW faster is ``improved``, slower ``regressed``, undecided ``inconclusive``
(:meth:`~surrobench.records.paired.Speedup.verdict`), else ``unchanged``; a config failed on one side only is
``regressed`` (ok -> failed) or ``improved``, on both ``not_compared``. The CI sees only the variation within each
run, not a shift between processes (Kalibera & Jones 2013): an A/A comparison measures it (docs/compare.md).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import PurePath

from surrobench.execution.host_facts import HOST_READINGS, busy_others
from surrobench.errors import UsageError
from surrobench.records import schemas
from surrobench.records.config import SETTINGS_NOTE, inputs_json, mode_text, same_settings
from surrobench.records.run import FAULTS_KEY, HOST_SUBMIT_KEY, LEAK_KEY, MEASURED_KEY, NONFINITE_KEY, PEAK_OWN_KEY
from surrobench.records.run import WARNINGS_KEY, ConfigResult, RunRecord, fmt, grouped
from surrobench.records.stats import MIN_SAMPLES_FOR_P95, ratio
from surrobench.records.paired import MIN_EFFECT, FasterRule, PairedSamples, Speedup, split_rounds
from surrobench.results.scaling import rank_key

#: Practical threshold on the latency ratio: the rule's smallest effect (:data:`surrobench.records.paired.MIN_EFFECT`).
DEFAULT_THRESHOLD = MIN_EFFECT
VERDICTS = ("improved", "regressed", "inconclusive", "unchanged", "not_compared")
#: The rule's verdict of NEW over BASE, as a comparison's verdict.
_BY_SPEEDUP = {"faster": "improved", "slower": "regressed", "inconclusive": "inconclusive", "unchanged": "unchanged"}
#: Fields of :meth:`ConfigResult.key`, in its order, and those a comparison may leave out of the match to
#: compare across them (eager vs cudagraph, fp32 vs bf16, cpu vs cuda). ``inputs`` (every input's shape and
#: dtype) is left out only when a run predates it (:data:`LEGACY_PAIRING_NOTE`).
KEY_FIELDS = ("model", "input_shape", "batch", "precision", "device", "mode", "inputs")
IGNORABLE_FIELDS = ("precision", "device", "mode")
#: Environment keys compared across runs that must match unless ``allow_env_mismatch``.
MUST_MATCH_ENV_KEYS = ("device_name",)
#: Rounds (``run --rounds``) both runs need before their comparison may gate (``--fail-on-regression``): fewer
#: rounds miss the drift between two processes (Kalibera & Jones 2013); docs/benchmarks/h200-compare.md found 4
#: needed on launch-bound configs, where A/A pairs of one and two rounds regressed.
MIN_GATE_ROUNDS = 4
#: The note on every pair of a comparison where a run recorded its primary input alone.
LEGACY_PAIRING_NOTE = (
    "paired on the primary input alone: a run predates per-input identity (run-v1, or a database row of schema 3 or "
    "older); configs of a multi-input model that differ in another input cannot be told apart in it"
)
#: ``ConfigResult.extra`` keys that are measurements, not settings: never a config difference (host submission,
#: host readings, page faults, memory growth, NaN/Inf, measured remedies).
_MEASURED_EXTRA = frozenset({HOST_SUBMIT_KEY, *HOST_READINGS, FAULTS_KEY, LEAK_KEY, NONFINITE_KEY, MEASURED_KEY})
#: Values listed one by one up to this many; more numeric values are summarized as a range.
_MAX_LISTED_VALUES = 3


@dataclass(frozen=True)
class RatioCI(schemas.Plain):
    """A ratio NEW/BASE (dimensionless) with its bootstrap 95% interval ``ci95 = (lo, hi)``."""

    ratio: float
    ci95: tuple[float, float]

    @classmethod
    def inverse(cls, ratio: float, ci95: tuple[float, float]) -> "RatioCI":
        """NEW/BASE from a BASE/NEW ratio and its interval."""
        return cls(1.0 / ratio, (1.0 / ci95[1], 1.0 / ci95[0]))


@dataclass(frozen=True)
class OpDelta(schemas.Plain):
    """One operator's self device time in both runs, ms; ``None`` where the op is absent from a run."""

    DERIVED = ("delta_ms", "ratio")

    name: str
    base_ms: float | None
    new_ms: float | None

    @property
    def delta_ms(self) -> float:
        """NEW - BASE self time in ms (an absent op counts as 0 ms)."""
        return (self.new_ms or 0.0) - (self.base_ms or 0.0)

    @property
    def ratio(self) -> float | None:
        """NEW / BASE self time, ``None`` when the op is absent from either run or took 0 ms in BASE."""
        return self.new_ms / self.base_ms if self.base_ms and self.new_ms is not None else None


def diff_ops(base_ms: Mapping[str, float], new_ms: Mapping[str, float]) -> tuple[OpDelta, ...]:
    """Per-operator change between two op tables ``{op name: self device time, ms}``; an op of one table only kept
    (the other side ``None``); largest ``|delta_ms|`` first, then by name."""
    names = set(base_ms) | set(new_ms)
    deltas = [OpDelta(n, base_ms.get(n), new_ms.get(n)) for n in names]
    return tuple(sorted(deltas, key=lambda d: (-abs(d.delta_ms), d.name)))


@dataclass(frozen=True)
class ConfigComparison:
    """One matched config: host-latency ratios NEW/BASE with bootstrap 95% CIs (``median_ratio``, ``p95_ratio``) and
    the ``speedup`` BASE over NEW by the one rule, None without samples; ``peak_mem_ratio`` None when unknown, 0 in
    BASE, or a CPU peak not the config's own or under 1 MiB (docs/design.md); ``top_op_share_ratio`` where both name
    the same top op; ``p95_trustworthy`` both with :data:`MIN_SAMPLES_FOR_P95` samples; ``op_deltas`` where both have
    an op table; ``contended`` both sides' ``other_cpus`` (``{"base", "new"}``) when either is busy by ``run``'s rule
    (:func:`~surrobench.execution.host_facts.busy_others`); ``notes`` one-line remarks (small samples, an
    inconclusive change, a failed config, a busy host)."""

    base: ConfigResult
    new: ConfigResult
    verdict: str
    median_ratio: RatioCI | None = None
    p95_ratio: RatioCI | None = None
    speedup: Speedup | None = None
    peak_mem_ratio: float | None = None
    top_op_share_ratio: float | None = None
    p95_trustworthy: bool = False
    op_deltas: tuple[OpDelta, ...] = ()
    contended: dict[str, float | None] | None = None
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict:
        def both(value) -> dict:
            return {"base": value(self.base), "new": value(self.new)}

        return {
            **self.base.key().to_json(),
            "inputs": both(lambda r: inputs_json(r.inputs)),
            "status": both(lambda r: r.status),
            "median_ms": both(lambda r: r.latency_ms and r.latency_ms.median),
            "p95_ms": both(lambda r: r.latency_ms and r.latency_ms.p95),
            "peak_mem_bytes": both(lambda r: r.peak_mem_bytes),
            "top_op": both(lambda r: r.top_op),
            "median_ratio": self.median_ratio.to_json() if self.median_ratio else None,
            "p95_ratio": self.p95_ratio.to_json() if self.p95_ratio else None,
            "speedup": self.speedup.to_json() if self.speedup else None,
            "peak_mem_ratio": self.peak_mem_ratio,
            "top_op_share_ratio": self.top_op_share_ratio,
            "p95_trustworthy": self.p95_trustworthy,
            "verdict": self.verdict,
            "contended": self.contended,
            "notes": list(self.notes),
            "op_deltas": [d.to_json() for d in self.op_deltas],
        }


@dataclass(frozen=True)
class EnvDifference(schemas.Plain):
    """An environment fact that differs: ``key`` is dotted (``gpu_clocks.before.sm_clock_mhz``) for the
    run environment and ``config.<key>`` for per-config settings (``config.cudnn_benchmark``)."""

    key: str
    base: str
    new: str


@dataclass(frozen=True)
class RunComparison:
    """The comparison of two runs: matched configs, configs found on one side only, env differences, and the model
    names of configs on one side only that differ in spelling alone (:func:`respelled`)."""

    base_run_id: str
    new_run_id: str
    threshold: float
    configs: tuple[ConfigComparison, ...]
    only_base: tuple[ConfigResult, ...] = ()
    only_new: tuple[ConfigResult, ...] = ()
    env_diff: tuple[EnvDifference, ...] = ()
    respelled: tuple[tuple[str, str], ...] = ()

    @property
    def verdict_counts(self) -> dict[str, int]:
        """Number of matched configs per verdict, every verdict listed."""
        return {v: sum(c.verdict == v for c in self.configs) for v in VERDICTS}

    def to_json(self) -> dict:
        """The ``surrobench/compare-v2`` object (:data:`surrobench.records.schemas.COMPARE`); ratios are plain
        fractions (1.05 = 5% slower)."""
        return {
            "schema": schemas.COMPARE,
            "base_run_id": self.base_run_id,
            "new_run_id": self.new_run_id,
            "threshold": self.threshold,
            "verdict_counts": self.verdict_counts,
            "configs": [c.to_json() for c in self.configs],
            "only_base": [r.key().identity_json() for r in self.only_base],
            "only_new": [r.key().identity_json() for r in self.only_new],
            "env_diff": [d.to_json() for d in self.env_diff],
            "respelled": [list(pair) for pair in self.respelled],
        }


def check_gate_inputs(base: RunRecord, new: RunRecord) -> None:
    """Refuse a gating comparison (``--fail-on-regression``) that could fail on noise: both runs need
    :data:`MIN_GATE_ROUNDS` rounds.

    Raises:
        UsageError: a run taken with fewer rounds.
    """
    short = [
        f"{side} {run.run_id} has {rounds}"
        for side, run in (("BASE", base), ("NEW", new))
        if (rounds := run.env.get("rounds", 1)) < MIN_GATE_ROUNDS
    ]
    if short:
        detail = (
            f"needs both runs taken with {{rounds}} {MIN_GATE_ROUNDS} or more ({'; '.join(short)} round(s)): an "
            "interval from fewer rounds misses the drift between runs and an A/A pair can fail"
        )
        raise UsageError.bad("gate", detail, others=("rounds",))


def gate_failed(cmp: RunComparison) -> bool:
    """The ``--fail-on-regression`` verdict: any matched config regressed.

    Raises:
        UsageError: no config in common, so nothing was compared (a gate that compared nothing must not pass).
    """
    if not cmp.configs:
        detail = (
            f"runs {cmp.base_run_id} and {cmp.new_run_id} have no config in common: nothing was compared (see "
            "the 'configs in one run only' table, or {ignore_fields})"
        )
        raise UsageError.bad("gate", f": {detail}", others=("ignore_fields",))
    return any(c.verdict == "regressed" for c in cmp.configs)


OpTables = Mapping[tuple, Mapping[str, float]]
"""Op tables of one run: ``{ConfigResult.key(): {op name: self device time, ms}}``."""


def compare_runs(
    base: RunRecord,
    new: RunRecord,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    allow_env_mismatch: bool = False,
    ignore_fields: tuple[str, ...] = (),
    base_ops: OpTables | None = None,
    new_ops: OpTables | None = None,
) -> RunComparison:
    """Match the configs of ``base`` and ``new`` and compare each pair (verdict rule: module docstring).

    Args:
        threshold: practical threshold on the latency ratio, a fraction (0.02 = 2%): the rule's smallest effect.
        allow_env_mismatch: compare runs made on different devices (``env["device_name"]``).
        ignore_fields: key fields left out of the match (:data:`IGNORABLE_FIELDS`), ``("mode",)`` or the text
            ``"precision,mode"``: an eager run against a CUDA-graph run of the same workload.
        base_ops, new_ops: op tables per config key, for the op-level diff.

    Raises:
        UsageError: threshold not a number or not in [0, 1), an unknown field in ``ignore_fields``,
            or the device names differ without ``allow_env_mismatch``.
    """
    _rule(threshold)
    if isinstance(ignore_fields, str):
        ignore_fields = tuple(f.strip() for f in ignore_fields.split(",") if f.strip())
    if not isinstance(ignore_fields, (tuple, list)) or not all(isinstance(f, str) for f in ignore_fields):
        raise UsageError.bad(
            "ignore_fields", f"{ignore_fields!r}: field names, as a sequence or comma-separated text, e.g. 'mode'"
        )
    for key in MUST_MATCH_ENV_KEYS:
        b, n = base.env.get(key), new.env.get(key)
        if b != n and not allow_env_mismatch:
            detail = (
                f"runs {base.run_id} and {new.run_id} differ in {key} ({b!r} vs {n!r}): set it to compare them anyway"
            )
            raise UsageError.bad("allow_env_mismatch", f": {detail}")
    pairs, only_base, only_new = match_configs(base.results, new.results, ignore_fields)
    base_ops, new_ops = base_ops or {}, new_ops or {}
    configs = tuple(
        compare_config(b, n, threshold=threshold, base_ops=base_ops.get(b.key()), new_ops=new_ops.get(n.key()))
        for b, n in pairs
    )
    if _legacy_pairing(base.results, new.results):
        configs = tuple(replace(c, notes=(*c.notes, LEGACY_PAIRING_NOTE)) for c in configs)
    run_level = _env_differences(_run_settings(base, new.env), _run_settings(new, base.env))
    shown = {d.key for d in run_level}
    env_diff = run_level + tuple(d for d in _config_differences(pairs) if d.key.removeprefix("config.") not in shown)
    alike = respelled(only_base, only_new)
    return RunComparison(base.run_id, new.run_id, threshold, configs, only_base, only_new, env_diff, alike)


def respelled(only_base: tuple[ConfigResult, ...], only_new: tuple[ConfigResult, ...]) -> tuple[tuple[str, str], ...]:
    """``(BASE model, NEW model)`` of configs in one run only, their models spelled differently but naming a file of
    one name and factory (``models.py:sfno``, ``../models.py:sfno``), every other key field equal. A run does not
    record the folder it ran in, so the file is compared by its name."""

    def named(r: ConfigResult) -> tuple:  # a name that is no file stands for itself alone
        file, _, factory = r.model.rpartition(":") if ".py:" in r.model else (r.model, "", "")
        return (PurePath(file).name, factory, *r.key()[1:]) if file.endswith((".py", ".pt2")) else (r.model,)

    base = [(b.model, named(b)) for b in only_base]
    new = [(n.model, named(n)) for n in only_new]
    pairs = ((b, n) for b, b_name in base for n, n_name in new if b != n and b_name == n_name)
    return tuple(dict.fromkeys(pairs))


def match_configs(
    base: tuple[ConfigResult, ...], new: tuple[ConfigResult, ...], ignore_fields: tuple[str, ...] = ()
) -> tuple[list[tuple[ConfigResult, ConfigResult]], tuple[ConfigResult, ...], tuple[ConfigResult, ...]]:
    """``(pairs, only in BASE, only in NEW)``: configs paired by equal :meth:`ConfigResult.key` (less ``ignore_fields``;
    the primary input alone where a side recorded no other, :data:`LEGACY_PAIRING_NOTE`) and equal place in a multi-rank
    run (:func:`~surrobench.results.scaling.rank_key`), in BASE order; a repeated key pairs in order of occurrence.

    Raises:
        UsageError: a field of ``ignore_fields`` is not in :data:`IGNORABLE_FIELDS`.
    """
    unknown = sorted(set(ignore_fields) - set(IGNORABLE_FIELDS))
    if unknown:
        raise UsageError.bad("ignore_fields", f"{','.join(unknown)}: can only ignore {', '.join(IGNORABLE_FIELDS)}")
    left_out = (*ignore_fields, "inputs") if _legacy_pairing(base, new) else ignore_fields
    kept = [i for i, name in enumerate(KEY_FIELDS) if name not in left_out]

    def match_key(r: ConfigResult) -> tuple:
        key = r.key()
        return (*(key[i] for i in kept), rank_key(r))

    by_key = grouped(new, match_key)
    pairs, only_base = [], []
    for r in base:
        candidates = by_key.get(match_key(r))
        if candidates:
            pairs.append((r, candidates.pop(0)))
        else:
            only_base.append(r)
    left = {id(c) for cs in by_key.values() for c in cs}
    only_new = tuple(r for r in new if id(r) in left)
    return pairs, tuple(only_base), only_new


def _legacy_pairing(base: tuple[ConfigResult, ...], new: tuple[ConfigResult, ...]) -> bool:
    """Whether a result of either run kept its primary input alone (one input, dtype None): pairing falls back to it."""
    return any(spec.dtype is None for r in (*base, *new) for spec in r.inputs)


def compare_config(
    base: ConfigResult,
    new: ConfigResult,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    base_ops: Mapping[str, float] | None = None,
    new_ops: Mapping[str, float] | None = None,
) -> ConfigComparison:
    """Compare one matched pair of configs (verdict rule: module docstring) from their ``samples_ms``.

    Raises:
        UsageError: threshold not in [0, 1).
    """
    rule = _rule(threshold)
    others = {"base": base.extra.get("other_cpus"), "new": new.extra.get("other_cpus")}
    busy = any(busy_others(r.extra) for r in (base, new))
    own = all(
        r.extra.get(PEAK_OWN_KEY, True) and (r.device != "cpu" or (r.peak_mem_bytes or 0) >= 1 << 20)
        for r in (base, new)
    )
    same_top = base.top_op and new.top_op and base.top_op.get("name") == new.top_op.get("name")
    common = {
        "peak_mem_ratio": ratio(new.peak_mem_bytes, base.peak_mem_bytes) if own else None,
        "top_op_share_ratio": ratio(new.top_op.get("share"), base.top_op.get("share")) if same_top else None,
        "op_deltas": diff_ops(base_ops, new_ops) if base_ops and new_ops else (),
        "contended": others if busy else None,
    }
    # modes and execution settings (mode_text; cudnn_benchmark when on) are outside the config key: the table hides them
    ran = [mode_text(r.mode, r.extra) + " cudnn_benchmark" * bool(r.extra.get("cudnn_benchmark")) for r in (base, new)]
    same = same_settings((base.mode, new.mode), (base.extra, new.extra))  # threads: each host's default where not set
    notes = [] if same else [SETTINGS_NOTE.format(*ran)]
    if busy:
        b, n = (fmt(others[side], ".2f") for side in ("base", "new"))
        notes.append(f"busy host: other processes kept {b} (BASE) and {n} (NEW) CPU(s) busy: a change may be theirs")
    if base.status != "ok" or new.status != "ok" or not base.samples_ms or not new.samples_ms:
        verdict, note = _status_verdict(base, new)
        return ConfigComparison(base, new, verdict, notes=(*notes, note), **common)
    pair = paired_samples(base, new)
    sp = pair.speedup()
    verdict = _BY_SPEEDUP[sp.verdict(rule)]
    median = RatioCI.inverse(sp.median, sp.ci95)
    if verdict == "inconclusive":
        lo, hi = median.ci95
        notes.append(
            f"{sp.words(rule)[0]}: median ratio {median.ratio:.3f}, 95% CI [{lo:.3f}, {hi:.3f}] "
            f"(±{sp.margin_text(rule)})"
        )
    fewest = min(len(pair.baseline), len(pair.candidate))
    if verdict in ("improved", "regressed") and not pair.paired and fewest < MIN_GATE_ROUNDS:
        # a CI from fewer rounds cannot see drift between runs (docs/benchmarks/h200-compare.md; MIN_GATE_ROUNDS)
        notes.append(
            f"runs of {len(pair.baseline)} and {len(pair.candidate)} round(s): the CI holds little of the drift "
            f"between the runs; confirm with both runs taken in {MIN_GATE_ROUNDS} rounds or more"
        )
    size = min(len(base.samples_ms), len(new.samples_ms))
    trustworthy = size >= MIN_SAMPLES_FOR_P95
    if not trustworthy:
        notes.append(f"P95 from {size} samples (< {MIN_SAMPLES_FOR_P95}) is not trustworthy")
    p95 = RatioCI.inverse(*pair.ratio(0.95))
    return ConfigComparison(
        base, new, verdict, median, p95, sp, p95_trustworthy=trustworthy, notes=tuple(notes), **common
    )


#: ``ConfigResult.extra`` key of the ``(process, window)`` of each round, written where BASE and NEW were timed
#: together (the baseline and recipe runs ``optimize`` stores): ``[[process, window], ...]``, one per round.
PAIRED_UNITS_KEY = "paired_units"


def paired_samples(base: ConfigResult, new: ConfigResult) -> PairedSamples:
    """The :class:`~surrobench.records.paired.PairedSamples` of two measured configs: timed together when both
    carry the same :data:`PAIRED_UNITS_KEY` units, else two separate runs, each split into its rounds
    (``extra["rounds"]``, one when absent or when its samples do not split evenly).

    Raises:
        ValueError: a side without samples.
    """
    units = [r.extra.get(PAIRED_UNITS_KEY) for r in (base, new)]
    rounds = [split_rounds(r.samples_ms, len(u) if u else r.extra.get("rounds", 1)) for r, u in zip((base, new), units)]
    if units[0] and units[0] == units[1] and all(len(u) == len(r) for u, r in zip(units, rounds)):
        held = tuple(tuple(u) for u in units[0])
        return PairedSamples(rounds[0], rounds[1], held, held)
    return PairedSamples.separate(*rounds)


def _rule(threshold: float) -> FasterRule:
    """The rule with ``threshold`` as its smallest effect.

    Raises:
        UsageError: threshold not a number, or not in [0, 1).
    """
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
        raise UsageError.bad("threshold", f"{threshold!r}: a number, not {type(threshold).__name__}")
    if not 0 <= threshold < 1:
        raise UsageError.bad("threshold", f"{threshold}: must be a fraction in [0, 1), e.g. 0.02 for 2%")
    return FasterRule(threshold)


def _status_verdict(base: ConfigResult, new: ConfigResult) -> tuple[str, str]:
    base_ok, new_ok = base.status == "ok" and base.samples_ms, new.status == "ok" and new.samples_ms
    if "interrupted" in (base.status, new.status):  # cut by Ctrl-C or a signal: the user's, not the code's
        return "not_compared", f"interrupted in {'BASE' if base.status == 'interrupted' else 'NEW'}: cut short"
    if base_ok and not new_ok:
        return "regressed", f"failed in NEW ({new.status}: {new.error or 'no samples'})"
    if new_ok and not base_ok:
        return "improved", f"failed in BASE ({base.status}: {base.error or 'no samples'}), ok in NEW"
    return "not_compared", f"failed in both runs ({base.status} / {new.status})"


def _flatten(d: Mapping, prefix: str = "") -> dict[str, object]:
    out: dict[str, object] = {}
    for k, v in d.items():
        if isinstance(v, Mapping):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def shown_value(value: object) -> str:
    """An environment value as a difference shows it: a float to 2 decimals (``load_avg_1m`` 1.2138671875 ->
    ``1.21``; one under 0.01 to 2 significant digits, so it does not read as 0), anything else as ``str``."""
    if isinstance(value, float) and math.isfinite(value):
        return f"{value:.2g}" if 0 < abs(value) < 0.01 else str(round(value, 2))
    return str(value)


def _run_settings(record: RunRecord, other: Mapping) -> dict:
    """``record.env`` with the run-wide settings the ``other`` side's env holds and it lacks (optimize's baseline run
    is stored without them) as its timed configs ran them: ``rounds`` (1 where none kept more), ``cudnn_benchmark``
    and ``tf32_by_precision``, each where all its configs (of that precision) ran it alike."""
    ran = [r for r in record.results if r.status == "ok"]
    held = {"rounds": {r.extra.get("rounds", 1) for r in ran}}
    held["cudnn_benchmark"] = {bool(r.extra.get("cudnn_benchmark")) for r in ran}
    tf32 = {p: {r.extra.get("matmul_allow_tf32") for r in ran if r.precision == p} for p in {r.precision for r in ran}}
    settings = {k: v.pop() for k, v in held.items() if len(v) == 1}
    settings["tf32_by_precision"] = {p: v.pop() for p, v in tf32.items() if len(v) == 1}
    return {**{k: v for k, v in settings.items() if k in other}, **record.env}


def _env_differences(base_env: Mapping, new_env: Mapping) -> tuple[EnvDifference, ...]:
    """The env keys whose values differ as shown (:func:`shown_value`: floats equal to 2 decimals do not),
    the must-match keys first; a diagnosis's warnings (:data:`~surrobench.records.run.WARNINGS_KEY`) left out."""
    b, n = (_flatten({k: v for k, v in env.items() if k != WARNINGS_KEY}) for env in (base_env, new_env))
    keys = [k for k in MUST_MATCH_ENV_KEYS if k in b or k in n]
    keys += sorted((set(b) | set(n)) - set(keys))
    shown = ((k, shown_value(b.get(k)), shown_value(n.get(k))) for k in keys)
    return tuple(EnvDifference(k, base, new) for k, base, new in shown if base != new)


def _config_differences(pairs: list[tuple[ConfigResult, ConfigResult]]) -> tuple[EnvDifference, ...]:
    """Per-config settings (TF32, cudnn.benchmark, SM clock, ...) known on both sides that differ in any matched
    pair; measurements (:data:`_MEASURED_EXTRA`) left out."""
    shared = [(k, b.extra[k], n.extra[k]) for b, n in pairs for k in (set(b.extra) & set(n.extra)) - _MEASURED_EXTRA]
    return tuple(
        EnvDifference(f"config.{k}", *(_summarize({_hashable(v[side]) for v in values}) for side in (1, 2)))
        for k, values in sorted(grouped(shared, lambda v: v[0]).items())
        if any(base != new for _, base, new in values)
    )


def _hashable(value):
    return value if isinstance(value, (str, int, float, bool, type(None))) else json.dumps(value, sort_keys=True)


def _summarize(values: set) -> str:
    """``a, b`` for a few values; ``lo..hi`` for many numbers."""
    if len(values) > _MAX_LISTED_VALUES and all(isinstance(v, (int, float)) for v in values):
        return f"{shown_value(min(values))}..{shown_value(max(values))}"
    return ", ".join(sorted(set(map(shown_value, values))))
