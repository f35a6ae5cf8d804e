"""The ids of every JSON document surrobench writes or reads (the ``"schema"`` key; a change of keys is a new
id), the one check of a stored document (:func:`check`), the one way a record flattens to JSON (:class:`Plain`),
and the file suffixes of the trace formats it reads.
"""

from __future__ import annotations

import functools
import math
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import fields

#: run-v5 adds the multi-rank run's ``scaling`` rows; run-v4 the status ``nonfinite`` (before, ``error``) and
#: ``points_per_s`` null for a model without points per sample; run-v3 each result's ``settings``, ``rounds`` and
#: ``rounds_planned``; run-v2 its ``inputs``. Every version reads (:data:`surrobench.records.run.DOCUMENTS`).
RUN, RUN_V4 = "surrobench/run-v5", "surrobench/run-v4"
RUN_V3 = "surrobench/run-v3"
RUN_V2 = "surrobench/run-v2"
RUN_V1 = "surrobench/run-v1"
#: compare-v2: the paired rule's verdict (``inconclusive``) and ``speedup`` per config in place of the p-value, and
#: ``inputs`` per entry. Nothing reads compare documents back.
COMPARE = "surrobench/compare-v2"
#: ``compare`` of two serve runs: their capacity at the P99 target (its keys are not compare-v2's).
COMPARE_SERVE = "surrobench/compare-serve-v1"
HISTORY = "surrobench/history-v1"
#: diagnosis-v8: each finding's ``gain.none_faster`` (derived); v7 a measured remedy's verdict ``unchanged`` or
#: ``inconclusive`` where v6 said ``no-difference``; v6 each finding's ``clauses``, ``measured`` and ``gain``, and
#: ``context.measured``; v5 ``context.host_floor``; v4 each finding's ``remedy_stacks``; v3 its ``remedies``; v2 its
#: ``evidence_source``. :meth:`surrobench.records.findings.Diagnosis.from_json` reads every version (a finding's
#: ``gain`` is derived from its fields again).
DIAGNOSIS = "surrobench/diagnosis-v8"
DIAGNOSIS_READ = tuple(f"surrobench/diagnosis-v{n}" for n in range(1, 8))
TIMELINE = "surrobench/timeline-v1"
CEILINGS = "surrobench/ceilings-v1"
PROFILE = "surrobench/profile-v3"  # v3: each op's ``inside`` (the ops it ran nested in); v2: each kernel_table
PROFILE_CHILD = "surrobench/profile-child-v1"
PERF = "surrobench/perf-v1"
MODELS = "surrobench/models-v1"
#: scenarios-v4: each finding with its ``clauses``, ``measured`` and ``gain`` (as diagnosis-v6); v3 its
#: ``remedy_stacks`` (as diagnosis-v4); v2 added its ``remedies``. Nothing reads it back.
SCENARIOS = "surrobench/scenarios-v4"
#: optimize-v3 adds the candidate verdict ``rejected_not_faster`` (in v1 and v2 ``rejected_slower`` held both) and
#: each config's ``unconfirmed``; v2 ``inputs`` per config. Every version reads
#: (:data:`surrobench.results.optimize.DOCUMENTS`).
OPTIMIZE = "surrobench/optimize-v3"
OPTIMIZE_V2 = "surrobench/optimize-v2"
OPTIMIZE_V1 = "surrobench/optimize-v1"
CROSS_RANK = "surrobench/cross-rank-v1"
#: rank-traces-v4: each finding with its ``clauses``, ``measured`` and ``gain`` (as diagnosis-v6); v3 its
#: ``remedy_stacks`` (as diagnosis-v4); v2 added its ``remedies``. Nothing reads it back.
RANK_TRACES = "surrobench/rank-traces-v4"
#: serve-v2 adds ``unloaded``, each capacity's ``predicted_rps``, ``infeasible`` and ``search_s``, each load point's
#: ``completed``, ``slo_attainment`` and ``errors``; later serve-v2 also each load point's ``offered_interval_rps``
#: and the record's ``find_max`` (absent: null), ``max_ms``, ``mean_ms`` null where none completed, the workload's
#: ``request_inputs`` (absent: the asked shape names it), each policy's derived ``capacity_offered_rps`` and
#: ``capacity_unresolved`` (ignored on read); each unloaded size's ``saturated_ms`` (absent: null), its ``loop_ms``
#: null where not measured (absent: null; 0 before 2026-12-08). serve-v1 reads.
SERVE = "surrobench/serve-v2"
SERVE_V1 = "surrobench/serve-v1"
#: ``optimize --objective capacity``: the candidates' predicted capacities and the verified recipe.
CAPACITY = "surrobench/capacity-v1"
#: ``versus``: a solver's ladder against a surrogate at equal accuracy and runtime (:mod:`surrobench.records.versus`).
VERSUS = "surrobench/versus-v1"
#: ``compare`` of two versus records: the matched-error speedups and their intervals, setting by setting.
COMPARE_VERSUS = "surrobench/compare-versus-v1"

#: Nsight Systems report files: ``.nsys-rep`` (2021.4 and later) and ``.qdrep`` (older releases).
NSYS_REPORT_SUFFIXES = (".nsys-rep", ".qdrep")


def plain(d: Mapping, record: type, but: tuple[str, ...] = ()) -> dict:
    """The keys of document object ``d`` that name fields of the dataclass ``record`` (less ``but``), as stored:
    a record's plain keys, read back as they were written (a key ``d`` lacks is left to the field's default)."""
    return {f.name: d[f.name] for f in fields(record) if f.init and f.name in d and f.name not in but}


class Plain:
    """A record whose JSON object is ``schema`` (a document's :attr:`SCHEMA`), its fields as stored: a tuple as a list,
    a nested record as its own object (or, for a field named in :attr:`INLINE`, its keys at this object's level), then
    each name of :attr:`DERIVED` (a property, or a method without arguments) as what it returns, read back by no one.
    :meth:`from_json` reads it back by the fields' annotations (a tuple field's list as a tuple, a nested record's
    object, or a tuple of them, as that record)."""

    SCHEMA: typing.ClassVar[str | None] = None
    INLINE: typing.ClassVar[tuple[str, ...]] = ()
    DERIVED: typing.ClassVar[tuple[str, ...]] = ()

    def to_json(self) -> dict:
        d: dict = {"schema": self.SCHEMA} if self.SCHEMA else {}
        for f in fields(self):
            value = _json(getattr(self, f.name))
            d.update(value) if f.name in self.INLINE else d.__setitem__(f.name, value)
        for name in self.DERIVED:
            value = getattr(self, name)
            d[name] = _json(value() if callable(value) else value)
        return d

    @classmethod
    def from_json(cls, d: Mapping):
        """Inverse of :meth:`to_json`; a key ``d`` lacks is left to the field's default, one it has that is not
        a field is ignored.

        Raises:
            TypeError: a field without a default missing from ``d``.
        """
        hints = _hints(cls)
        inline = {k: hints[k].from_json(d) for k in cls.INLINE}
        return cls(**{k: _read(hints[k], v) for k, v in plain(d, cls, cls.INLINE).items()}, **inline)


def _json(value):
    if isinstance(value, Plain):
        return value.to_json()
    if isinstance(value, dict):
        return {k: _json(v) for k, v in value.items()}
    return [_json(v) for v in value] if isinstance(value, (tuple, list)) else value


_hints = functools.cache(typing.get_type_hints)


def _read(hint, value):
    """``value`` read as annotation ``hint`` says: a :class:`Plain` record, a tuple (of records), else as is."""
    if value is None:
        return None
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) in (typing.Union, types.UnionType):  # X | None
        return _read(args[0], value) if len(args) == 1 else value
    if isinstance(hint, type) and issubclass(hint, Plain):
        return hint.from_json(value)
    if typing.get_origin(hint) is tuple:
        item = args[0] if len(args) == 2 and args[1] is Ellipsis else None
        return tuple(_read(item, v) if item is not None else v for v in value)
    return value


class DocumentError(ValueError):
    """A document that is not a valid one of its kind and version; the message starts with the bad key's path
    (``configs[0].candidates[2].verdict: ...``, ``schema: ...``, ``top level: ...``)."""


#: A check of one value at a key path: ``check(value, where)``, raising :class:`DocumentError`.
Check = Callable[[object, str], None]


def fail(where: str, what: str) -> DocumentError:
    return DocumentError(f"{where or 'top level'}: {what}")


def _is(kinds: type | tuple, expected: str) -> Check:
    def check(value: object, where: str) -> None:
        if isinstance(value, bool) is (kinds is not bool) or not isinstance(value, kinds):
            raise fail(where, f"expected {expected}, got {type(value).__name__}")

    return check


text, flag, obj = _is(str, "a string"), _is(bool, "true or false"), _is(dict, "an object")
#: An int or a float, not a bool; infinite where an error was (a rel L2 of a non-finite output).
number = _is((int, float), "a number")


def anything(value: object, where: str) -> None:
    """A value of any kind (a key only named)."""


def measure(value: object, where: str) -> None:
    """A time, rate or size: a finite number >= 0."""
    number(value, where)
    if not math.isfinite(value) or value < 0:
        raise fail(where, f"{value!r} is not a finite non-negative number")


def whole(low: int = 0) -> Check:
    def check(value: object, where: str) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise fail(where, f"expected a whole number >= {low}, got {value!r}"[:200])

    return check


def one_of(words: tuple[str, ...]) -> Check:
    def check(value: object, where: str) -> None:
        if value not in words:
            raise fail(where, f"{str(value)[:80]!r} is not one of {', '.join(words)}")

    return check


def nullable(check: Check) -> Check:
    return lambda value, where: None if value is None else check(value, where)


def list_of(check: Check) -> Check:
    def each(value: object, where: str) -> None:
        if not isinstance(value, list):
            raise fail(where, f"expected a list, got {type(value).__name__}")
        for i, item in enumerate(value):
            check(item, f"{where}[{i}]")

    return each


def pair(check: Check) -> Check:
    """An interval, ``[low, high]``, each bound passing ``check``."""

    def both(value: object, where: str) -> None:
        list_of(check)(value, where)
        if len(value) != 2:
            raise fail(where, f"expected [low, high], got {len(value)} values")

    return both


def keys(
    required: Mapping[str, Check],
    optional: Mapping[str, Check] | None = None,
    *,
    exact: bool = False,
    rule: Callable[[dict, str], None] | None = None,
) -> Check:
    """An object holding every ``required`` key, each checked; an ``optional`` key checked where present; any
    other key left alone, or refused when ``exact``; then ``rule(value, where)`` across its keys."""
    optional = optional or {}

    def check(value: object, where: str) -> None:
        obj(value, where)
        missing = [k for k in required if k not in value]
        if missing:
            raise fail(where, f"missing key(s) {', '.join(missing)}")
        unknown = sorted(map(str, set(value) - set(required) - set(optional))) if exact else ()
        if unknown:
            raise fail(where, f"unknown key(s) {', '.join(unknown)}"[:200])
        for key, key_check in (*required.items(), *optional.items()):
            if key in value:
                key_check(value[key], f"{where}.{key}" if where else key)
        if rule is not None:
            rule(value, where)

    return check


def check(doc: object, versions: Mapping[str, Check], schema: object = None, where: str = "") -> None:
    """Check ``doc`` as the version its ``"schema"`` key names (or ``schema``, for a part of a document kept
    apart from it), ``versions`` being ``{schema id: check}`` of one kind, newest first.

    Raises:
        DocumentError: the first problem, as ``key.path: what is wrong``.
    """
    if schema is None:
        obj(doc, "")
        schema = doc.get("schema")
    if schema not in versions:
        newest, *older = versions
        also = f" (or {', '.join(map(repr, older))})" if older else ""
        raise fail("schema", f"{str(schema)[:80]!r} is not {newest!r}{also}")
    versions[schema](doc, where)
