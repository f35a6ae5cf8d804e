"""The run record and its JSON form, ``surrobench/run-v5`` (docs/design.md, "Run JSON"; every older version
reads, :data:`DOCUMENTS`).

``to_json`` emits exactly the keys of the design; anything else known about a config (clock readings, TF32
switches) lives in ``extra``, stored in the database but not in the run JSON. A run-v1 result's identity is its
primary input alone (:class:`~surrobench.records.config.InputSpec` with dtype None).

A stored creation time (``created`` of runs, serve runs and optimizations) has one format, :func:`created_now`'s
(``2026-12-04T18:30:08+00:00``); :func:`created_utc` also reads an older serve run's local time without an offset.

**As rows for a notebook**: flat records (:data:`RECORD_KEYS`), a pandas DataFrame (pandas optional) and a small
HTML table, one row per config result; times in ms, memory in bytes, throughput per second, the top op's share a
fraction, as in the run JSON. The per-iteration samples are counted (``n_samples``), not listed.
"""

from __future__ import annotations

import datetime as dt
import html
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields

from surrobench.records import schemas
from surrobench.records.config import EXEC_SETTINGS, ConfigKey, InputSpec, inputs_json, inputs_of, inputs_text
from surrobench.records.config import mode_text, same_settings
from surrobench.records.paired import PairedSamples, split_rounds
from surrobench.records.stats import LatencyStats
from surrobench.records.vocab import DEVICES, MODES, PRECISIONS, STATUSES

#: ``extra`` key of a CPU result whose ``peak_mem_bytes`` is not its own peak, written as False only then: the
#: high-water mark could not be reset before it (not Linux with glibc), so the figure is its growth over a peak
#: that earlier configs may have set, and it depends on their order (:mod:`surrobench.execution.memory`).
PEAK_OWN_KEY = "peak_mem_own"
#: The settings a run-v3 result names (``extra`` keys, written where set): :data:`EXEC_SETTINGS` and cudnn.benchmark.
RESULT_SETTINGS = (*EXEC_SETTINGS, "cudnn_benchmark")


#: The ``extra`` key of a CUDA result's host submission time: the median over its timed calls of the host clock from
#: the call to its return, before the synchronize (:mod:`surrobench.execution.timing`), ms. Stored with the result
#: (the database's ``extra_json``), not in the run JSON.
HOST_SUBMIT_KEY = "host_submit_ms"
#: ``extra`` key of a CPU result: the process's minor page faults per timed call (getrusage(2) ``ru_minflt``):
#: memory taken afresh on every call, which moved a baseline 3-4x between processes (docs/benchmarks/cpu-allocator.md).
FAULTS_KEY = "minor_faults_per_call"
#: ``extra`` key of memory grown on most calls: ``{"bytes_per_call", "growth_bytes", "calls"}`` (merged: ``"rounds"``).
LEAK_KEY = "memory_growth"
#: ``extra`` key of a config whose forward changed its input: the indices of the changed tensors in call order.
MUTATED_KEY = "mutated_inputs"
#: ``extra`` key of the torch context a config's forward ran in: ``inference_mode`` (the deploy setting, the fastest)
#: or ``no_grad``, for a forward that takes gradients (``surrobench.execution.runner.in_grad_mode``).
GRAD_MODE_KEY = "grad_mode"
#: ``extra`` key of an output that held NaN or Inf (:func:`surrobench.execution.sanity.check_calls`'s record).
NONFINITE_KEY = "nonfinite"
#: ``extra`` key of a diagnosed config: the remedies diagnose measured for it (MeasuredRemedy objects).
MEASURED_KEY = "measured_remedies"
#: ``env`` key of a diagnosed run: the warnings its diagnosis gave (``surrobench.api.diagnose``).
WARNINGS_KEY = "diagnosis_warnings"

#: Keys a row of a multi-process run adds to its run-v1 entry (``surrobench.results.scaling``): ``placement``
#: (config index, role, rank, world size, host, GPU UUID) and ``comm`` (time inside collectives).
MULTI_RANK_KEYS = ("placement", "comm")


def _ok_is_timed(d: dict, where: str) -> None:
    if d["status"] == "ok" and d["latency_ms"] is None:
        raise schemas.fail(f"{where}.latency_ms", "null for an ok config")


def _with_inputs(d: dict, where: str) -> None:
    """A run-v2 result's ``inputs`` start with the primary ``input_shape``."""
    _ok_is_timed(d, where)
    inputs, primary = d["inputs"], d["input_shape"]
    if inputs and inputs[0]["shape"] != primary:
        raise schemas.fail(f"{where}.inputs[0].shape", f"{inputs[0]['shape']} is not the primary input_shape {primary}")


def _run_id(value: object, where: str) -> None:
    schemas.text(value, where)
    if not value:
        raise schemas.fail(where, "empty")


_s = schemas
_count, _text, _measure = _s.nullable(_s.whole()), _s.nullable(_s.text), _s.nullable(_s.measure)
#: A :class:`LatencyStats` object: exactly its keys, each a :func:`~surrobench.records.schemas.measure`.
_latency = _s.keys(
    {f.name: _s.measure for f in fields(LatencyStats)} | {"ci95_median": _s.pair(_s.measure)}, exact=True
)
#: The checks of a run-v1 result's keys, in the order written; run-v2 adds ``inputs``, run-v3 the settings
#: outside the config key it ran with, the rounds its samples came from, and the rounds asked for when an
#: interruption left it short (else null).
_V1 = {
    "model": _s.text,
    "input_shape": _s.list_of(_s.whole(1)),
    "batch": _s.whole(1),
    "precision": _s.one_of(PRECISIONS),
    "device": _s.one_of(DEVICES),
    "mode": _s.one_of(MODES),
    "status": _s.one_of(STATUSES),
    "error": _text,
    "warmup": _s.whole(),
    "iters": _s.whole(),
    "cold_start_ms": _measure,
    "latency_ms": _s.nullable(_latency),
    "device_ms": _s.nullable(_latency),
    "throughput": _s.keys({}, {"samples_per_s": _measure, "points_per_s": _measure}),
    "peak_mem_bytes": _count,
    "peak_reserved_bytes": _count,
    "top_op": _s.nullable(_s.keys({"name": _s.text, "share": _s.measure})),
    "samples_ms": _s.list_of(_s.measure),
}
_V2 = _V1 | {"inputs": _s.list_of(_s.keys({"shape": _s.list_of(_s.whole()), "dtype": _text}, exact=True))}
_V3 = _V2 | {"settings": _s.keys({}, dict.fromkeys(RESULT_SETTINGS, _s.anything), exact=True)}
_V3 |= {"rounds": _s.whole(1), "rounds_planned": _s.nullable(_s.whole(1))}
RESULT_KEYS_V3 = tuple(_V3)
#: A multi-process row's placement (:class:`Placement`) and time in collectives.
_PLACEMENT = {"config": _s.whole(), "role": _s.text, "rank": _count, "world_size": _s.whole(1), "host": _text}
_MULTI_RANK = {
    "placement": _s.nullable(_s.keys(_PLACEMENT | {"device_uuid": _text}, exact=True)),
    "comm": _s.keys({"comm_ms": _latency, "comm_wait_ms": _latency}, exact=True),
}


@dataclass(frozen=True)
class ConfigResult:
    """The outcome of one config: statistics, throughput, memory, status.

    Attributes:
        input_shape: primary input as executed, batch included, e.g. ``(2, 3, 64, 64)``; ``inputs`` every input
            (:class:`~surrobench.records.config.InputSpec`), the primary one first, empty when the config failed
            before they were built; ``shape_label`` the ladder rung as the user wrote it (``"64"``).
        latency_ms: host wall clock around a synchronized call, ms; None unless status is ``ok`` or the
            failure came after timing (a non-finite output).
        device_ms: CUDA-event time of the same iterations, ms; None on CPU.
        samples_per_s, points_per_s: throughput at the median latency; ``points_per_s`` None where the points per
            sample are not known (an ``example_inputs`` hook, a default input of rank 2 or less: docs/run.md).
        peak_mem_bytes: CUDA peak allocated over the config (weights and inputs included); on CPU the peak
            resident-set growth of its warm-up and timed calls (one-time caches, the inputs and weights outside).
        top_op: ``{"name", "share"}`` once profiled (share of device time, a fraction).
        samples_ms, device_samples_ms: per-iteration host latencies and device times (CUDA only), ms, in order.
        extra: stored facts outside the run JSON (sm_clock_mhz, tf32 switches, ...).
        config_id: its row in the results database once stored (None before, and for a result read from a
            run JSON file); not in the run JSON nor in equality.
    """

    model: str
    shape_label: str
    input_shape: tuple[int, ...]
    batch: int
    precision: str
    device: str
    mode: str
    status: str
    error: str | None
    warmup: int
    iters: int
    cold_start_ms: float | None = None
    latency_ms: LatencyStats | None = None
    device_ms: LatencyStats | None = None
    samples_per_s: float | None = None
    points_per_s: float | None = None
    peak_mem_bytes: int | None = None
    peak_reserved_bytes: int | None = None
    top_op: dict | None = None
    samples_ms: tuple[float, ...] = ()
    device_samples_ms: tuple[float, ...] = ()
    inputs: tuple[InputSpec, ...] = ()
    extra: dict = field(default_factory=dict)
    config_id: int | None = field(default=None, compare=False)

    @classmethod
    def of(cls, config: Mapping, rounds: int = 1, **known) -> ConfigResult:
        """The one constructor of a result, measured or read back: ``config`` the config as a JSON object holds it
        (a run JSON entry of any version, which makes this the inverse of :meth:`to_json`; a database row, its JSON
        columns read; an optimize config; the runner's config), ``known`` what the caller measured or read
        otherwise, as it is (``extra`` added to the one read).

        Read from ``config``: every field it holds under the field's name, the samples as tuples, ``latency_ms``
        and ``device_ms`` from their JSON objects; ``inputs``, before run-v2 the primary ``input_shape`` alone
        (:func:`~surrobench.records.config.inputs_of`); ``shape_label`` where not kept, the executed shape
        (``2x3x64x64``); ``warmup`` and ``iters`` where not kept, 0; ``throughput``'s two rates; into ``extra``,
        ``settings`` (run-v3, optimize, runner), ``rounds`` (run-v3's own, else ``rounds``, the run's
        ``env["rounds"]``, where over 1), ``rounds_planned`` where set and a multi-process row's
        :data:`MULTI_RANK_KEYS`."""
        shape = tuple(config["input_shape"])
        read = {"shape_label": "x".join(map(str, shape)), "warmup": 0, "iters": 0, "extra": {}}  # where not kept
        read |= {f.name: config[f.name] for f in fields(cls) if f.name in config}
        rates = config.get("throughput", {})  # a run JSON entry's
        read |= {key: rates[key] for key in ("samples_per_s", "points_per_s") if key in rates}
        for key in ("latency_ms", "device_ms"):
            read[key] = LatencyStats.from_json(read[key]) if read.get(key) else None
        for key in ("samples_ms", "device_samples_ms"):
            read[key] = tuple(read.get(key, ()))
        rounds = config.get("rounds", rounds)  # run-v3: its own
        extra = {**read["extra"], **({"rounds": rounds} if rounds > 1 else {}), **config.get("settings", {})}
        if config.get("rounds_planned"):
            extra["rounds_planned"] = config["rounds_planned"]
        extra |= {key: config[key] for key in MULTI_RANK_KEYS if key in config}
        read |= {"input_shape": shape, "inputs": inputs_of(config), "extra": extra | known.pop("extra", {})}
        return cls(**(read | known))

    def shape_text(self) -> str:
        """Every executed input, ``2x3x64x64`` (batch included where the input has one, e.g. not DeepONet's
        shared ``(N, 2)`` query points), several joined by commas and a dtype other than fp32 named
        (:func:`~surrobench.records.config.inputs_text`: ``65536x2,1x100``); the primary input alone for a record
        without ``inputs``; the ladder label when no shape was recorded."""
        return inputs_text(self.inputs) or "x".join(map(str, self.input_shape)) or self.shape_label

    def label(self) -> str:
        """One config in one line, ``fno2d 2x3x64x64 b2 fp32 eager``: the one label of tables and findings;
        a recipe's settings follow the mode (``unet2d 1x3x512x512 b1 tf32 compile(reduce-overhead)
        channels_last``, :func:`surrobench.records.config.mode_text`)."""
        return f"{self.model} {self.shape_text()} b{self.batch} {self.precision} {mode_text(self.mode, self.extra)}"

    def __repr__(self) -> str:
        """One line: the label, the status and the median and P95 (ms), or the error; the samples counted."""
        if self.status != "ok" or self.latency_ms is None:
            return f"<ConfigResult {self.label()}: {self.status}: {(self.error or '')[:80]}>"
        lat = self.latency_ms
        return (
            f"<ConfigResult {self.label()}: median {lat.median:.4g} ms, P95 {lat.p95:.4g} ms, "
            f"{len(self.samples_ms)} samples>"
        )

    @property
    def host_submit_ms(self) -> float | None:
        """The host's submission time of one step (:data:`HOST_SUBMIT_KEY`), ms; None on CPU and for a result
        recorded before it was measured."""
        return self.extra.get(HOST_SUBMIT_KEY)

    def points_per_sample(self) -> float | None:
        """Grid points, nodes or query points per sample, from the throughputs; None when not measured."""
        if not self.samples_per_s or self.points_per_s is None:
            return None
        return self.points_per_s / self.samples_per_s

    def key(self) -> ConfigKey:
        """The config identity, matching key across runs: (model, executed input shape, batch, precision,
        device, mode, every input's shape and dtype)."""
        return ConfigKey(
            self.model, tuple(self.input_shape), self.batch, self.precision, self.device, self.mode, self.inputs
        )

    def same_config(self, other: ConfigResult) -> bool:
        """Whether ``other`` ran this config as this ran it: the same :meth:`key`, as many inputs of the same shapes and
        dtypes where both record one (a legacy record's one input matches), and ``same_settings`` (torch's default)."""
        same = same_settings((self.mode, other.mode), (self.extra, other.extra))
        same = same and self.key()[:-1] == other.key()[:-1] and len(self.inputs) == len(other.inputs)  # inputs: below
        pairs = zip(self.inputs, other.inputs)
        return same and all(a.shape == b.shape and (a.dtype == b.dtype or None in (a.dtype, b.dtype)) for a, b in pairs)

    def to_json(self) -> dict:
        """The run-v3 ``results`` entry, exactly the keys of docs/design.md; a row of a multi-process run adds
        :data:`MULTI_RANK_KEYS` (its placement, and a rank's time inside collectives where measured)."""
        return {
            **self.key().to_json(),
            "status": self.status,
            "error": self.error,
            "warmup": self.warmup,
            "iters": self.iters,
            "cold_start_ms": self.cold_start_ms,
            "latency_ms": self.latency_ms.to_json() if self.latency_ms else None,
            "device_ms": self.device_ms.to_json() if self.device_ms else None,
            "throughput": {"samples_per_s": self.samples_per_s, "points_per_s": self.points_per_s},
            "peak_mem_bytes": self.peak_mem_bytes,
            "peak_reserved_bytes": self.peak_reserved_bytes,
            "top_op": self.top_op,
            "samples_ms": list(self.samples_ms),
            "inputs": inputs_json(self.inputs),
            "settings": {k: self.extra[k] for k in RESULT_SETTINGS if self.extra.get(k) not in (None, False)},
            "rounds": self.extra.get("rounds", 1),
            "rounds_planned": self.extra.get("rounds_planned"),
            **{k: self.extra[k] for k in MULTI_RANK_KEYS if k in self.extra},
        }


def grouped(items: Iterable, key: Callable[[object], object]) -> dict:
    """``items`` (config results, kernel rows, ...) by ``key(item)``: groups in first-seen order, each in input
    order."""
    groups = defaultdict(list)
    for item in items:
        groups[key(item)].append(item)
    return groups


@dataclass(frozen=True)
class RunRecord:
    """One ``surrobench run``: its id, time, tag, environment fingerprint and config results."""

    run_id: str
    created: str
    tag: str | None
    env: dict
    results: tuple[ConfigResult, ...] = ()

    #: Results listed by :meth:`__repr__`; the rest are counted.
    REPR_RESULTS = 8

    @property
    def short_of_rounds(self) -> int:
        """How many results an interruption left with fewer rounds than asked (``extra["rounds_planned"]``)."""
        return sum(1 for r in self.results if r.extra.get("rounds_planned"))

    def device_text(self) -> str:
        """Where it ran: ``NVIDIA H100 80GB HBM3``; a multi-process run's ``2 x NVIDIA H100 80GB HBM3 (configs)``."""
        name, ranks = self.env.get("device_name"), self.env.get("world_size")
        return f"{ranks} x {name} ({self.env.get('parallel')})" if ranks else str(name)

    def __repr__(self) -> str:
        """A few lines: the run, its device and one line per result (at most :data:`REPR_RESULTS`)."""
        head = f"<RunRecord {self.run_id} {self.created} tag={self.tag!r} on {self.device_text()}: "
        lines = [head + f"{len(self.results)} result(s)"]
        lines += [f"  {r!r}" for r in self.results[: self.REPR_RESULTS]]
        if len(self.results) > self.REPR_RESULTS:
            lines.append(f"  ... {len(self.results) - self.REPR_RESULTS} more>")
        return "\n".join(lines) + ("" if len(self.results) > self.REPR_RESULTS else ">")

    def _repr_html_(self) -> str:
        """A notebook's view, a small HTML table: the run in a caption, then per result (at most :data:`HTML_ROWS`) its
        label, status, median and P95 (ms), samples/s and peak MiB, or its error. Every text is escaped."""
        head = ("config", "status", "median ms", "P95 ms", "samples/s", "peak MiB")
        rows = []
        for rec in self.to_records()[:HTML_ROWS]:
            peak = rec["peak_mem_bytes"]
            status = rec["status"] if rec["status"] == "ok" else f"{rec['status']}: {(rec['error'] or '')[:120]}"
            median, p95 = fmt(rec["median_ms"], ".3f"), fmt(rec["p95_ms"], ".3f")
            mib = fmt(peak / BYTES_PER_MIB if peak is not None else None, ".1f")
            cells = (rec["label"], status, median, p95, fmt(rec["samples_per_s"], ".4g"), mib)
            rows.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
        more = len(self.results) - HTML_ROWS
        caption = (
            f"run {self.run_id} ({self.created}, tag {self.tag or '-'}) on {self.device_text()}: "
            f"{len(self.results)} result(s)" + (f", {more} more not shown (to_records() has all)" if more > 0 else "")
        )
        header = "".join(f"<th>{h}</th>" for h in head)
        return (
            f"<table><caption>{html.escape(caption)}</caption><thead><tr>{header}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>"
        )

    def to_records(self) -> list[dict]:
        """One flat dict per result (:func:`result_record`, :data:`RECORD_KEYS`: times in ms, memory in bytes), in
        order, for a notebook, a CSV writer or a DataFrame; needs no pandas."""
        return [result_record(self.run_id, r) for r in self.results]

    def to_pandas(self):
        """:meth:`to_records` as a ``pandas.DataFrame`` with the columns :data:`RECORD_KEYS`; pandas is imported
        here, on first use.

        Raises:
            ImportError: pandas is not installed (surrobench does not need it; ``to_records()`` does not).
        """
        try:
            import pandas
        except ImportError:
            raise ImportError(
                "to_pandas() needs pandas, which surrobench does not install: pip install pandas "
                "(or use to_records(), a list of dicts)"
            ) from None
        return pandas.DataFrame(self.to_records(), columns=list(RECORD_KEYS))

    def to_json(self) -> dict:
        """The whole run as ``surrobench/run-v5``: ``scaling`` the rows of a multi-rank run (:func:`scaling_rows`,
        empty for any other)."""
        return {
            "schema": schemas.RUN,
            "run_id": self.run_id,
            "created": self.created,
            "tag": self.tag,
            "env": self.env,
            "results": [r.to_json() for r in self.results],
            "scaling": [row.to_json() for row in scaling_rows(self.results)],
        }


@dataclass(frozen=True)
class Profile:
    """A profiled run: the timed run (``top_op`` set on the configs profiled), one report per config profiled (each with
    ``to_json()``: torch.profiler's or nsys's under ``schema`` :data:`~surrobench.records.schemas.PROFILE`, the system
    pass's under :data:`~surrobench.records.schemas.PERF`), the warnings."""

    run: RunRecord
    reports: tuple = ()
    warnings: tuple[str, ...] = ()
    schema: str = schemas.PROFILE

    def to_json(self) -> dict:
        """``surrobench/profile-v3`` ``{"schema", "run", "profiles"}`` (each config's op table, readings and kernel
        table, null on a CPU run) or ``surrobench/perf-v1`` ``{"schema", "run", "perf"}`` (its system pass)."""
        key = "perf" if self.schema == schemas.PERF else "profiles"
        return {"schema": self.schema, "run": self.run.to_json(), key: [r.to_json() for r in self.reports]}


@dataclass(frozen=True)
class ChildReport:
    """One config's report from a profiling child (``api.profile``, ``api.perf``, ``api.nsys``): ``config`` the timed
    result, ``config_id`` its row, ``status`` and ``error`` the child's (``ok``, ``oom``, ``error``)."""

    config: ConfigResult
    config_id: int
    status: str
    error: str | None

    def label(self) -> str:
        return self.config.label()

    def to_json(self) -> dict:
        """The config's key (:meth:`ConfigKey.to_json`), ``label`` (:meth:`ConfigResult.label`), status and error."""
        return {**self.config.key().to_json(), "label": self.label(), "status": self.status, "error": self.error}


#: A row's role in a multi-rank run (:mod:`surrobench.results.scaling`): the one-device reference (rank 0 alone),
#: one rank of the job, the step (max over ranks), or a config dealt to one of several devices (``configs``).
ROLES = ("reference", "rank", "step", "spread")


@dataclass(frozen=True)
class Placement(schemas.Plain):
    """Where a result was measured in a multi-process run: the ``config``'s index in the run's plan, its ``role``
    (:data:`ROLES`), the process's ``rank`` (None for the step row), the ``world_size`` that ran it together (1 for
    ``reference`` and ``spread``), the rank's ``host`` and GPU (``device_uuid``, None on the CPU)."""

    config: int
    role: str
    rank: int | None
    world_size: int
    host: str | None = None
    device_uuid: str | None = None

    def label(self) -> str:
        """``ref 1``, ``rank 1/2``, ``step 2``, ``dev 1``: the rank column of the results table."""
        return {
            "reference": "ref 1",
            "rank": f"rank {self.rank}/{self.world_size}",
            "step": f"step {self.world_size}",
            "spread": f"proc {self.rank}",
        }[self.role]


def placement(result: ConfigResult) -> Placement | None:
    """The result's placement, or None for a result of an ordinary single-process run."""
    d = result.extra.get("placement")
    return None if d is None else Placement(**d)


@dataclass(frozen=True)
class ScalingRow(schemas.Plain):
    """Strong scaling (Amdahl 1967; Hager & Wellein, "Introduction to High Performance Computing for Scientists and
    Engineers", 2010, ch. 5): speedup = throughput on N devices / throughput on one, efficiency = speedup / N; for
    replicas the N-device throughput counts every rank's batch, for a distributed model one global batch per step.

    One config of a multi-rank run (``world_size`` N, the step row's ``label``) against its one-device
    reference (``solo_``): median latencies (the step's is of the max over ranks per iteration; the ranks' in rank
    order) and throughputs; ``speedup`` ``samples_per_s / solo_samples_per_s`` with its bootstrap 95% interval;
    ``efficiency`` speedup / N; ``rank_skew`` slowest rank median / fastest - 1; ``comm_ms``, ``comm_wait_ms`` per
    rank, the median time inside collectives and waiting in them per step (None without torch.distributed calls).
    """

    label: str
    world_size: int
    solo_median_ms: float | None
    step_median_ms: float | None
    rank_median_ms: tuple[float, ...]
    solo_samples_per_s: float | None
    samples_per_s: float | None
    speedup: float | None
    speedup_ci95: tuple[float, float] | None
    efficiency: float | None
    rank_skew: float | None
    comm_ms: tuple[float, ...] | None
    comm_wait_ms: tuple[float, ...] | None


def _scaling_row(solo: ConfigResult | None, ranks: list[ConfigResult], step: ConfigResult) -> ScalingRow:
    world = len(ranks)
    ok_ranks = [r for r in ranks if r.latency_ms is not None]
    medians = tuple(r.latency_ms.median for r in ok_ranks)
    speedup = ci = None
    solo_ok = solo is not None and solo.status == "ok" and solo.samples_per_s
    if solo_ok and step.status == "ok" and step.samples_per_s:
        speedup = step.samples_per_s / solo.samples_per_s
        # samples per step of the N-rank job over the reference's: N for replicas, 1 for a distributed model
        factor = speedup * step.latency_ms.median / solo.latency_ms.median
        rounds = [split_rounds(r.samples_ms, r.extra.get("rounds", 1)) for r in (solo, step)]
        _, (lo, hi) = PairedSamples.separate(*rounds).ratio(0.5)  # median(solo) / median(step)
        ci = (factor * lo, factor * hi)
    comm = [r.extra.get("comm") for r in ranks]
    has_comm = all(comm)
    return ScalingRow(
        label=step.label(),
        world_size=world,
        solo_median_ms=solo.latency_ms.median if solo is not None and solo.latency_ms else None,
        step_median_ms=step.latency_ms.median if step.latency_ms else None,
        rank_median_ms=medians,
        solo_samples_per_s=solo.samples_per_s if solo is not None else None,
        samples_per_s=step.samples_per_s,
        speedup=speedup,
        speedup_ci95=ci,
        efficiency=speedup / world if speedup is not None else None,
        rank_skew=max(medians) / min(medians) - 1 if len(medians) == world and min(medians) > 0 else None,
        comm_ms=tuple(c["comm_ms"]["median"] for c in comm) if has_comm else None,
        comm_wait_ms=tuple(c["comm_wait_ms"]["median"] for c in comm) if has_comm else None,
    )


def scaling_rows(results: tuple[ConfigResult, ...] | list[ConfigResult]) -> list[ScalingRow]:
    """The scaling table of a multi-rank run's results (empty for an ordinary run), in plan order."""
    rows = []
    placed = grouped([(where, r) for r in results if (where := placement(r)) is not None], lambda p: p[0].config)
    for _, group in sorted(placed.items()):
        roles = {where.role: r for where, r in group}  # the last of each role
        ranks = {where.rank: r for where, r in group if where.role == "rank"}
        if "step" in roles and ranks:
            rows.append(_scaling_row(roles.get("reference"), [ranks[k] for k in sorted(ranks)], roles["step"]))
    return rows


def _run(result: dict, scaling: bool = False) -> schemas.Check:
    s, rule = schemas, _with_inputs if "inputs" in result else _ok_is_timed
    results = s.list_of(s.keys(result, _MULTI_RANK, rule=rule))
    top = {"run_id": _run_id, "created": s.text, "tag": s.nullable(s.text), "env": s.keys({}, {"rounds": s.whole(1)})}
    rows = s.list_of(s.keys(dict.fromkeys((f.name for f in fields(ScalingRow)), s.anything), exact=True))
    return s.keys(top | {"results": results} | ({"scaling": rows} if scaling else {}))


#: ``{schema id: check}`` of run documents, newest first (docs/design.md, "Run JSON"): every key of a result of
#: that version with its type, times, rates and sizes finite and non-negative, the vocabularies of precision,
#: device, mode and status; a multi-process row's :data:`MULTI_RANK_KEYS` where present.
DOCUMENTS = {schemas.RUN: _run(_V3, scaling=True), schemas.RUN_V4: _run(_V3), schemas.RUN_V3: _run(_V3)}
DOCUMENTS |= {schemas.RUN_V2: _run(_V2), schemas.RUN_V1: _run(_V1)}


def run_from_json(d: object) -> RunRecord:
    """Inverse of :meth:`RunRecord.to_json`, after checking it (:data:`DOCUMENTS`).

    Raises:
        DocumentError: the object is not a valid run document of any version.
    """
    schemas.check(d, DOCUMENTS)
    return RunRecord(
        run_id=d["run_id"],
        created=d["created"],
        tag=d.get("tag"),
        env=d["env"],
        results=tuple(ConfigResult.of(r, d["env"].get("rounds", 1)) for r in d["results"]),
    )


def created_now() -> str:
    """This instant as a stored ``created``: ISO 8601, UTC, seconds, ``+00:00``."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def created_utc(text: str) -> str:
    """A stored ``created`` in the one format (:func:`created_now`): a time with an offset converted to UTC, a time
    without one (an older serve run's ``datetime.now()``) read as the local time of this machine, as it was
    written; text that is no ISO time is returned as it is."""
    try:
        instant = dt.datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return text
    return instant.astimezone(dt.timezone.utc).isoformat(timespec="seconds")


#: The keys of every record, in column order.
RECORD_KEYS = tuple(
    "run_id label model shape batch precision device mode status median_ms p95_ms p99_ms mean_ms ci95_low_ms"
    " ci95_high_ms device_median_ms samples_per_s points_per_s peak_mem_bytes cold_start_ms top_op top_op_share"
    " n_samples warmup iters error".split()
)
#: Rows of :meth:`RunRecord._repr_html_`; the rest are counted under the table.
HTML_ROWS = 50
BYTES_PER_MIB = 1024**2


def result_record(run_id: str, r) -> dict:
    """One flat dict of :data:`RECORD_KEYS` for ``r`` (None where unknown)."""
    lat, dev, top = r.latency_ms, r.device_ms, r.top_op or {}
    return {
        "run_id": run_id,
        "label": r.label(),
        "model": r.model,
        "shape": r.shape_text(),
        "batch": r.batch,
        "precision": r.precision,
        "device": r.device,
        "mode": r.mode,
        "status": r.status,
        "median_ms": lat.median if lat else None,
        "p95_ms": lat.p95 if lat else None,
        "p99_ms": lat.p99 if lat else None,
        "mean_ms": lat.mean if lat else None,
        "ci95_low_ms": lat.ci95_median[0] if lat else None,
        "ci95_high_ms": lat.ci95_median[1] if lat else None,
        "device_median_ms": dev.median if dev else None,
        "samples_per_s": r.samples_per_s,
        "points_per_s": r.points_per_s,
        "peak_mem_bytes": r.peak_mem_bytes,
        "cold_start_ms": r.cold_start_ms,
        "top_op": top.get("name"),
        "top_op_share": top.get("share"),
        "n_samples": len(r.samples_ms),
        "warmup": r.warmup,
        "iters": r.iters,
        "error": r.error,
    }


def fmt(value: float | None, spec: str = ".3f", missing: str = "-") -> str:
    """``value`` formatted by ``spec``, ``missing`` when None: every table's cell of an optional number."""
    return missing if value is None else format(value, spec)
