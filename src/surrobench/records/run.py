"""The run record and its JSON form, ``surrobench/run-v2`` (docs/design.md, "Run JSON").

``ConfigResult.to_json`` and ``RunRecord.to_json`` emit exactly the keys of the design; anything
else we know about a config (clock readings, TF32 switches, cudnn.benchmark) lives in ``extra``, which
is stored in the database but not written to the run JSON. run-v2 is run-v1 with ``inputs`` per result
(every input's shape and dtype, the config identity); a run-v1 document still reads, each result's
identity being its primary input alone (:class:`~surrobench.records.config.InputSpec` with dtype None).
"""

from __future__ import annotations

import math
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
            "latency_ms": self.latency_ms.to_dict() if self.latency_ms else None,
            "device_ms": self.device_ms.to_dict() if self.device_ms else None,
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


class RunJsonError(ValueError):
    """A JSON document that is not a valid ``surrobench/run-v4`` (or run-v3, run-v2, run-v1) run; the message names the bad
    key path."""


def _fail(where: str, what: str) -> RunJsonError:
    return RunJsonError(f"{where}: {what}")


def _number(value: object, where: str, *, optional: bool = False) -> None:
    """A finite, non-negative int or float (not a bool): times, rates and sizes are never NaN or negative."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _fail(where, f"expected a number, got {type(value).__name__}")
    if not math.isfinite(value) or value < 0:
        raise _fail(where, f"{value!r} is not a finite non-negative number")


def _integer(value: object, where: str, *, low: int = 0, optional: bool = False) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise _fail(where, f"expected an integer >= {low}, got {value!r}"[:200])


def _text(value: object, where: str, *, optional: bool = False, choices: tuple[str, ...] = ()) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str):
        raise _fail(where, f"expected a string, got {type(value).__name__}")
    if choices and value not in choices:
        raise _fail(where, f"{value[:80]!r} is not one of {', '.join(choices)}")


def _stats(value: object, where: str) -> None:
    if value is None:
        return
    if not isinstance(value, dict):
        raise _fail(where, f"expected an object, got {type(value).__name__}")
    names = [f.name for f in fields(LatencyStats)]
    unknown = sorted(set(value) - set(names))
    if unknown:
        raise _fail(where, f"unknown key(s) {', '.join(map(str, unknown))[:200]}")
    for f in fields(LatencyStats):
        if f.name == "ci95_median":
            ci = value.get(f.name)
            if not isinstance(ci, list) or len(ci) != 2:
                raise _fail(f"{where}.ci95_median", "expected [low, high]")
            for i, bound in enumerate(ci):
                _number(bound, f"{where}.ci95_median[{i}]")
        else:
            _number(value.get(f.name), f"{where}.{f.name}")


def _check_result(d: object, where: str, keys: tuple[str, ...]) -> None:
    """Every key of ``keys`` (run-v1's, run-v2's or run-v3's) of one ``results`` entry present, of its type, finite
    and within its vocabulary."""
    if not isinstance(d, dict):
        raise _fail(where, f"expected an object, got {type(d).__name__}")
    missing = [k for k in keys if k not in d]
    if missing:
        raise _fail(where, f"missing key(s) {', '.join(missing)}")
    _text(d["model"], f"{where}.model")
    shape = d["input_shape"]
    if not isinstance(shape, list):
        raise _fail(f"{where}.input_shape", f"expected a list, got {type(shape).__name__}")
    for i, dim in enumerate(shape):
        _integer(dim, f"{where}.input_shape[{i}]", low=1)
    _integer(d["batch"], f"{where}.batch", low=1)
    _text(d["precision"], f"{where}.precision", choices=PRECISIONS)
    _text(d["device"], f"{where}.device", choices=DEVICES)
    _text(d["mode"], f"{where}.mode", choices=MODES)
    _text(d["status"], f"{where}.status", choices=STATUSES)
    _text(d["error"], f"{where}.error", optional=True)
    _integer(d["warmup"], f"{where}.warmup")
    _integer(d["iters"], f"{where}.iters")
    _number(d["cold_start_ms"], f"{where}.cold_start_ms", optional=True)
    _stats(d["latency_ms"], f"{where}.latency_ms")
    _stats(d["device_ms"], f"{where}.device_ms")
    if d["status"] == "ok" and d["latency_ms"] is None:
        raise _fail(f"{where}.latency_ms", "null for an ok config")
    throughput = d["throughput"]
    if not isinstance(throughput, dict):
        raise _fail(f"{where}.throughput", f"expected an object, got {type(throughput).__name__}")
    for key in ("samples_per_s", "points_per_s"):
        _number(throughput.get(key), f"{where}.throughput.{key}", optional=True)
    _integer(d["peak_mem_bytes"], f"{where}.peak_mem_bytes", optional=True)
    _integer(d["peak_reserved_bytes"], f"{where}.peak_reserved_bytes", optional=True)
    top = d["top_op"]
    if top is not None:
        if not isinstance(top, dict):
            raise _fail(f"{where}.top_op", f"expected an object, got {type(top).__name__}")
        _text(top.get("name"), f"{where}.top_op.name")
        _number(top.get("share"), f"{where}.top_op.share")
    _check_multi_rank(d, where)
    if not isinstance(d["samples_ms"], list):
        raise _fail(f"{where}.samples_ms", f"expected a list, got {type(d['samples_ms']).__name__}")
    for i, sample in enumerate(d["samples_ms"]):
        _number(sample, f"{where}.samples_ms[{i}]")
    if "inputs" in keys:
        _check_inputs(d["inputs"], shape, f"{where}.inputs")
    if "settings" in keys:
        settings = d["settings"]
        if not isinstance(settings, dict):
            raise _fail(f"{where}.settings", f"expected an object, got {type(settings).__name__}")
        unknown = sorted(set(settings) - set(RESULT_SETTINGS))
        if unknown:
            raise _fail(f"{where}.settings", f"unknown key(s) {', '.join(unknown)}")
        _integer(d["rounds"], f"{where}.rounds", low=1)
        _integer(d["rounds_planned"], f"{where}.rounds_planned", low=1, optional=True)


def _check_inputs(inputs: object, primary: list, where: str) -> None:
    """A run-v2 ``inputs`` list: objects of ``shape`` (positive ints) and ``dtype`` (a string, or null for
    a result migrated from a record without it), the first one the primary ``input_shape``."""
    if not isinstance(inputs, list):
        raise _fail(where, f"expected a list, got {type(inputs).__name__}")
    for i, spec in enumerate(inputs):
        if not isinstance(spec, dict) or set(spec) != {"shape", "dtype"}:
            raise _fail(f"{where}[{i}]", "expected an object with keys shape, dtype")
        if not isinstance(spec["shape"], list):
            raise _fail(f"{where}[{i}].shape", f"expected a list, got {type(spec['shape']).__name__}")
        for j, dim in enumerate(spec["shape"]):
            _integer(dim, f"{where}[{i}].shape[{j}]", low=0)
        _text(spec["dtype"], f"{where}[{i}].dtype", optional=True)
    if inputs and inputs[0]["shape"] != primary:
        raise _fail(f"{where}[0].shape", f"{inputs[0]['shape']} is not the primary input_shape {primary}")


#: The placement of a multi-process row (``surrobench.results.scaling.Placement``) as JSON: key -> check.
_PLACEMENT = {
    "config": lambda v, w: _integer(v, w),
    "role": lambda v, w: _text(v, w),
    "rank": lambda v, w: _integer(v, w, optional=True),
    "world_size": lambda v, w: _integer(v, w, low=1),
    "host": lambda v, w: _text(v, w, optional=True),
    "device_uuid": lambda v, w: _text(v, w, optional=True),
}


def _check_multi_rank(d: dict, where: str) -> None:
    """:data:`MULTI_RANK_KEYS` where present: a placement of exactly :data:`_PLACEMENT`'s keys, and a
    ``comm`` object of two latency statistics (``surrobench.results.scaling.comm_breakdown``)."""
    placement = d.get("placement")
    if placement is not None:
        if not isinstance(placement, dict) or set(placement) != set(_PLACEMENT):
            raise _fail(f"{where}.placement", f"expected an object with keys {', '.join(_PLACEMENT)}")
        for key, check in _PLACEMENT.items():
            check(placement[key], f"{where}.placement.{key}")
    if "comm" in d:
        comm = d["comm"]
        if not isinstance(comm, dict) or set(comm) != {"comm_ms", "comm_wait_ms"}:
            raise _fail(f"{where}.comm", "expected an object with keys comm_ms, comm_wait_ms")
        for key, stats in comm.items():
            if stats is None:
                raise _fail(f"{where}.comm.{key}", "null")
            _stats(stats, f"{where}.comm.{key}")


def check_run_json(d: object) -> None:
    """Validate a whole ``surrobench/run-v4`` (or run-v3, run-v2, run-v1) document before anything reads it: the schema id, every key
    of the run JSON of docs/design.md with its type, finite non-negative numbers, and the vocabularies of precision,
    device, mode and status.

    Raises:
        RunJsonError: the first problem, as ``key.path: what is wrong``.
    """
    if not isinstance(d, dict):
        raise _fail("top level", f"expected an object, got {type(d).__name__}")
    keys = {
        schemas.RUN: RESULT_KEYS_V3,
        schemas.RUN_V3: RESULT_KEYS_V3,
        schemas.RUN_V2: RESULT_KEYS_V2,
        schemas.RUN_V1: RESULT_KEYS,
    }.get(d.get("schema"))
    if keys is None:
        older = f"{schemas.RUN_V3!r}, {schemas.RUN_V2!r}, {schemas.RUN_V1!r}"
        raise _fail("schema", f"{str(d.get('schema'))[:80]!r} is not {schemas.RUN!r} (or {older})")
    for key in ("run_id", "created"):
        _text(d.get(key), key)
    if not d["run_id"]:
        raise _fail("run_id", "empty")
    _text(d.get("tag"), "tag", optional=True)
    if not isinstance(d.get("env"), dict):
        raise _fail("env", f"expected an object, got {type(d.get('env')).__name__}")
    _integer(d["env"].get("rounds", 1), "env.rounds", low=1)
    if not isinstance(d.get("results"), list):
        raise _fail("results", f"expected a list, got {type(d.get('results')).__name__}")
    for i, result in enumerate(d["results"]):
        _check_result(result, f"results[{i}]", keys)


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
    document :func:`check_run_json` accepted; a run-v1 entry, which has no ``inputs``, gets its primary input of
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
        latency_ms=LatencyStats.from_dict(d["latency_ms"]) if d["latency_ms"] else None,
        device_ms=LatencyStats.from_dict(d["device_ms"]) if d["device_ms"] else None,
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
    """Inverse of :meth:`RunRecord.to_json`, after :func:`check_run_json`.

    Raises:
        RunJsonError: the object is not a valid ``surrobench/run-v3``, ``run-v2`` or ``run-v1`` run.
    """
    check_run_json(d)
    return RunRecord(
        run_id=d["run_id"],
        created=d["created"],
        tag=d.get("tag"),
        env=d["env"],
        results=tuple(result_from_json(r, d["env"].get("rounds", 1)) for r in d["results"]),
    )
