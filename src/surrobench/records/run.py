"""The run record and its JSON form, ``surrobench/run-v2`` (docs/design.md, "Run JSON").

``ConfigResult.to_json`` and ``RunRecord.to_json`` emit exactly the keys of the design; anything
else we know about a config (clock readings, TF32 switches, cudnn.benchmark) lives in ``extra``, which
is stored in the database but not written to the run JSON. run-v2 is run-v1 with ``inputs`` per result
(every input's shape and dtype, the config identity); a run-v1 document still reads, each result's
identity being its primary input alone (:class:`~surrobench.records.config.InputSpec` with dtype None).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

from surrobench.records import schemas, tabular
from surrobench.records.config import (
    EXEC_SETTINGS,
    ConfigKey,
    InputSpec,
    inputs_json,
    inputs_of,
    inputs_text,
    mode_text,
)
from surrobench.records.stats import LatencyStats
from surrobench.records.vocab import DEVICES, MODES, PRECISIONS, STATUSES

RESULT_KEYS = (
    "model",
    "input_shape",
    "batch",
    "precision",
    "device",
    "mode",
    "status",
    "error",
    "warmup",
    "iters",
    "cold_start_ms",
    "latency_ms",
    "device_ms",
    "throughput",
    "peak_mem_bytes",
    "peak_reserved_bytes",
    "top_op",
    "samples_ms",
)
#: What a run-v2 result adds to :data:`RESULT_KEYS`.
RESULT_KEYS_V2 = (*RESULT_KEYS, "inputs")
#: ``extra`` key of a CPU result whose ``peak_mem_bytes`` is not its own peak, written as False only then: the
#: high-water mark could not be reset before it (not Linux with glibc), so the figure is its growth over a peak
#: that earlier configs may have set, and it depends on their order (:mod:`surrobench.execution.memory`).
PEAK_OWN_KEY = "peak_mem_own"
#: What a run-v3 result adds to :data:`RESULT_KEYS_V2`: the settings outside the config key it ran with, the rounds
#: its samples came from, and the rounds asked for when an interruption left it short (else null).
RESULT_KEYS_V3 = (*RESULT_KEYS_V2, "settings", "rounds", "rounds_planned")
#: The settings a run-v3 result names (``extra`` keys, written where set): :data:`EXEC_SETTINGS` and cudnn.benchmark.
RESULT_SETTINGS = (*EXEC_SETTINGS, "cudnn_benchmark")


#: The ``extra`` key of a CUDA result's host submission time: the median over its timed calls of the host clock from
#: the call to its return, before the synchronize (:mod:`surrobench.execution.timing`), ms. Stored with the result
#: (the database's ``extra_json``), not in the run JSON.
HOST_SUBMIT_KEY = "host_submit_ms"

#: Keys a row of a multi-process run adds to its run-v1 entry (``surrobench.results.scaling``): ``placement``
#: (config index, role, rank, world size, host, GPU UUID) and ``comm`` (time inside collectives).
MULTI_RANK_KEYS = ("placement", "comm")


@dataclass(frozen=True)
class ConfigResult:
    """The outcome of one config: statistics, throughput, memory, status.

    Attributes:
        input_shape: primary input as executed, batch included, e.g. ``(2, 3, 64, 64)``.
        inputs: every input as executed (shape and dtype), the primary one first; part of :meth:`key`. Empty
            when the config failed before its inputs were built; one input of dtype None when read from a
            record that kept the primary input alone (run-v1, a database of schema 3 or older).
        shape_label: the ladder rung as the user wrote it (``"64"``), for tables and matching.
        latency_ms: host wall clock around a synchronized call, ms; None unless status is ``ok`` or the
            failure came after timing (a non-finite output).
        device_ms: CUDA-event time of the same iterations, ms; None on CPU.
        samples_per_s, points_per_s: throughput at the median latency.
        peak_mem_bytes: CUDA peak allocated over the config (weights and inputs included);
            on CPU the peak resident-set growth.
        top_op: ``{"name", "share"}`` once profiled (share of device time, a fraction).
        samples_ms: per-iteration host latencies, ms, in order.
        device_samples_ms: per-iteration device times, ms (CUDA only).
        extra: stored facts outside the run-v1 schema (sm_clock_mhz, tf32 switches, ...).
        config_id: its row in the results database once stored (None before, and for a result read from a
            run JSON file); not part of the run-v1 JSON nor of equality. With :meth:`key` it is how later
            stages find a result's stored op table, never its position in a list.
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
        """One line for a notebook or a debugger: the label, the status and the median and P95 (ms), or the
        error; the samples are counted, not listed (``samples_ms`` holds them)."""
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

    def with_top_op(self, name: str, share: float) -> "ConfigResult":
        """A copy with ``top_op`` set (share of device time, a fraction in [0, 1])."""
        return replace(self, top_op={"name": name, "share": float(share)})

    def to_json(self) -> dict:
        """The run-v3 ``results`` entry, exactly the keys of docs/design.md; a row of a multi-process run adds
        :data:`MULTI_RANK_KEYS` (its placement, and a rank's time inside collectives where measured)."""
        return {**self._design_json(), **{k: self.extra[k] for k in MULTI_RANK_KEYS if k in self.extra}}

    def _design_json(self) -> dict:
        return {
            "model": self.model,
            "input_shape": list(self.input_shape),
            "batch": self.batch,
            "precision": self.precision,
            "device": self.device,
            "mode": self.mode,
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
        }


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

    def __repr__(self) -> str:
        """A few lines for a notebook: the run, its device and one line per result (:meth:`ConfigResult.__repr__`,
        at most :data:`REPR_RESULTS`); never the samples. ``to_json()`` has everything."""
        head = f"<RunRecord {self.run_id} {self.created} tag={self.tag!r} on {self.env.get('device_name')}: "
        lines = [head + f"{len(self.results)} result(s)"]
        lines += [f"  {r!r}" for r in self.results[: self.REPR_RESULTS]]
        if len(self.results) > self.REPR_RESULTS:
            lines.append(f"  ... {len(self.results) - self.REPR_RESULTS} more>")
        return "\n".join(lines) + ("" if len(self.results) > self.REPR_RESULTS else ">")

    def _repr_html_(self) -> str:
        """A notebook's view: a small HTML table, a row per result (:func:`surrobench.records.tabular.run_html`)."""
        return tabular.run_html(self)

    def to_records(self) -> list[dict]:
        """One flat dict per result (:data:`surrobench.records.tabular.RECORD_KEYS`: times in ms, memory in
        bytes), for a notebook, a CSV writer or a DataFrame; needs no pandas."""
        return tabular.run_records(self)

    def to_pandas(self):
        """:meth:`to_records` as a ``pandas.DataFrame``; pandas is imported here, on first use.

        Raises:
            ImportError: pandas is not installed (a one-line message saying so).
        """
        return tabular.run_dataframe(self)

    def to_json(self) -> dict:
        """The whole run as ``surrobench/run-v4``."""
        return {
            "schema": schemas.RUN,
            "run_id": self.run_id,
            "created": self.created,
            "tag": self.tag,
            "env": self.env,
            "results": [r.to_json() for r in self.results],
        }


def _latency(value: object, where: str) -> None:
    """A :class:`LatencyStats` object: exactly its keys, each a :func:`~surrobench.records.schemas.measure`."""
    m = schemas.measure
    names = {f.name: m for f in fields(LatencyStats)}
    schemas.keys(names | {"ci95_median": schemas.pair(m)}, exact=True)(value, where)


def _ok_is_timed(d: dict, where: str) -> None:
    if d["status"] == "ok" and d["latency_ms"] is None:
        raise schemas.fail(f"{where}.latency_ms", "null for an ok config")


def _with_inputs(d: dict, where: str) -> None:
    """A run-v2 result's ``inputs`` start with the primary ``input_shape``."""
    _ok_is_timed(d, where)
    inputs, primary = d["inputs"], d["input_shape"]
    if inputs and inputs[0]["shape"] != primary:
        raise schemas.fail(f"{where}.inputs[0].shape", f"{inputs[0]['shape']} is not the primary input_shape {primary}")


def _result_checks() -> dict[str, schemas.Check]:
    """``{schema id: check}`` of run documents (docs/design.md, "Run JSON"): every key of a result of that version
    with its type, times, rates and sizes finite and non-negative, the vocabularies of precision, device, mode and
    status; a row of a multi-process run's :data:`MULTI_RANK_KEYS` where present (its placement, as
    ``surrobench.results.scaling.Placement``, and two latency statistics of collectives)."""
    s = schemas
    count, text, measure = s.nullable(s.whole()), s.nullable(s.text), s.nullable(s.measure)
    placement = {"config": s.whole(), "role": s.text, "rank": count, "world_size": s.whole(1), "host": text}
    multi_rank = {
        "placement": s.nullable(s.keys(placement | {"device_uuid": text}, exact=True)),
        "comm": s.keys({"comm_ms": _latency, "comm_wait_ms": _latency}, exact=True),
    }
    v1 = {
        "model": s.text, "input_shape": s.list_of(s.whole(1)), "batch": s.whole(1),
        "precision": s.one_of(PRECISIONS), "device": s.one_of(DEVICES), "mode": s.one_of(MODES),
        "status": s.one_of(STATUSES), "error": text, "warmup": s.whole(), "iters": s.whole(), "cold_start_ms": measure,
        "latency_ms": s.nullable(_latency), "device_ms": s.nullable(_latency),
        "throughput": s.keys({}, {"samples_per_s": measure, "points_per_s": measure}),
        "peak_mem_bytes": count, "peak_reserved_bytes": count,
        "top_op": s.nullable(s.keys({"name": s.text, "share": s.measure})), "samples_ms": s.list_of(s.measure),
    }  # fmt: skip
    v2 = v1 | {"inputs": s.list_of(s.keys({"shape": s.list_of(s.whole()), "dtype": text}, exact=True))}
    settings = s.keys({}, dict.fromkeys(RESULT_SETTINGS, s.anything), exact=True)
    v3 = v2 | {"settings": settings, "rounds": s.whole(1), "rounds_planned": s.nullable(s.whole(1))}

    def run(result: dict) -> s.Check:
        rule = _with_inputs if "inputs" in result else _ok_is_timed
        env = s.keys({}, {"rounds": s.whole(1)})
        results = s.list_of(s.keys(result, multi_rank, rule=rule))
        return s.keys({"run_id": _run_id, "created": s.text, "tag": text, "env": env, "results": results})

    return {schemas.RUN: run(v3), schemas.RUN_V3: run(v3), schemas.RUN_V2: run(v2), schemas.RUN_V1: run(v1)}


def _run_id(value: object, where: str) -> None:
    schemas.text(value, where)
    if not value:
        raise schemas.fail(where, "empty")


#: ``{schema id: check}`` of run documents, newest first (:func:`_result_checks`).
DOCUMENTS = _result_checks()


def identity_from_json(d: dict) -> dict:
    """The identity fields of a :class:`ConfigResult` in a JSON config object (a run result, an optimize config):
    model, the executed ``input_shape`` (also as ``shape_label``, ``2x3x64x64``), batch, precision, device, mode
    and ``inputs`` (:func:`~surrobench.records.config.inputs_of`)."""
    shape = tuple(d["input_shape"])
    return {
        "model": d["model"], "shape_label": "x".join(map(str, shape)), "input_shape": shape, "batch": d["batch"],
        "precision": d["precision"], "device": d["device"], "mode": d["mode"], "inputs": inputs_of(d),
    }  # fmt: skip


def result_from_json(d: dict, rounds: int = 1) -> ConfigResult:
    """Inverse of :meth:`ConfigResult.to_json` (the ladder label becomes the executed shape, ``2x3x64x64``).

    ``rounds`` is the run's ``env["rounds"]`` (``run --rounds``), kept in ``extra`` as the store keeps it; a
    run-v3 entry's own ``rounds``, ``rounds_planned`` and ``settings`` take its place. ``d`` is one entry of a
    document :data:`DOCUMENTS` accepted; a run-v1 entry, which has no ``inputs``, gets its primary input of
    unknown dtype (:class:`~surrobench.records.config.InputSpec`).
    """
    if "settings" in d:  # run-v3
        rounds = d["rounds"]
        own = {**d["settings"], **({"rounds_planned": d["rounds_planned"]} if d["rounds_planned"] else {})}
    else:
        own = {}
    throughput = d["throughput"]
    return ConfigResult(
        **identity_from_json(d),
        status=d["status"],
        error=d["error"],
        warmup=d["warmup"],
        iters=d["iters"],
        cold_start_ms=d["cold_start_ms"],
        latency_ms=LatencyStats.from_json(d["latency_ms"]) if d["latency_ms"] else None,
        device_ms=LatencyStats.from_json(d["device_ms"]) if d["device_ms"] else None,
        samples_per_s=throughput.get("samples_per_s"),
        points_per_s=throughput.get("points_per_s"),
        peak_mem_bytes=d["peak_mem_bytes"],
        peak_reserved_bytes=d["peak_reserved_bytes"],
        top_op=d["top_op"],
        samples_ms=tuple(d["samples_ms"]),
        extra={
            **({"rounds": rounds} if rounds > 1 else {}),
            **own,
            **{k: d[k] for k in MULTI_RANK_KEYS if k in d},
        },
    )


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
        results=tuple(result_from_json(r, d["env"].get("rounds", 1)) for r in d["results"]),
    )
