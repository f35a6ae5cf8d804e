"""CPU diagnoses in CPU terms: no GPU word in any finding a CPU config can get; the model's own forward is compute,
never preprocessing; page faults, threads beyond the free cores and denormals read (planted evidence)."""

from __future__ import annotations

import os
from dataclasses import replace
from types import SimpleNamespace

import pytest
from gpu_terms import gpu_words
from synthetic import config, latency_samples

from surrobench.analysis.detect_host import PAGE_FAULTS_MIN_PER_STEP
from surrobench.analysis.diagnose import diagnose_config, diagnose_run
from surrobench.analysis.evidence import ConfigEvidence
from surrobench.execution import host_facts as host_facts_module
from surrobench.analysis.op_families import OP_FAMILIES, family_actions, words
from surrobench.records.findings import Finding
from surrobench.records.ops import OpStat, OpTable, categorize
from surrobench.records.system import HostHotspot, SystemView

#: One op of every family, and a few more a CPU step runs.
OPS = (
    "aten::group_norm",
    "aten::_fft_r2c",
    "aten::index_add_",
    "aten::conv2d",
    "aten::mm",
    "aten::add",
    "aten::copy_",
    "aten::cat",
    "aten::gelu",
    "aten::topk",
)
HOST = {"torch_threads": 8, "usable_cpus": 2, "load_1m": 9.0, "subnormal_share": 0.02}


def _texts(f: Finding) -> list[str]:
    return [f.summary, f.action, *(e.text for e in f.evidence)]


def _cpu_table() -> OpTable:
    share = 1.0 / len(OPS)
    small = ("aten::add", "aten::copy_", "aten::cat", "aten::gelu")  # 100 calls of 4 us: fragments
    rows = tuple(OpStat(n, categorize(n), 100 if n in small else 10, 0.0, 0.0, share, 4000.0 * share) for n in OPS)
    return OpTable(rows, "cpu", 4000.0, 1, "profiler")


def _result(median_ms=4.0, size=64, precision="fp32", **extra):
    return config(latency_samples(median_ms, 0.0), size=size, precision=precision, extra={**HOST, **extra})


def _system(wall_ms=40.0, faults=70_000.0) -> SystemView:
    spots = (
        HostHotspot("message_passing (model.py)", 0.6, 0.5, "py-spy", model_share=0.6),  # the model's own layer
        HostHotspot("load_mesh (prep.py)", 0.3, 0.3, "py-spy", model_share=0.0),  # host work outside the model
    )
    return SystemView(wall_ms=wall_ms, counters={"page-faults": faults}, hotspots=spots)


def _evidence(**kw) -> ConfigEvidence:
    known = {"label": "m 1x3x64x64 b1 fp32 eager", "result": _result(), "op_table": _cpu_table(), "system": _system()}
    return ConfigEvidence(**{**known, **kw})


def test_every_family_speaks_cpu_on_a_cpu():
    every = [
        *OPS,
        "aten::slow_conv3d_forward",
        "aten::index",
        "aten::searchsorted",
        "aten::grid_sampler_2d",
        "aten::slice",
        "aten::avg_pool2d",
    ]
    for clause in family_actions(every, cpu=True) + family_actions([*every, "aten::cdist"], cpu=True):
        assert gpu_words(clause.text) == [], clause.text
    assert {f.name for f in OP_FAMILIES} == _families(every) | {"distance/selection"}  # a kNN's with a distance op
    assert gpu_words(" ".join(f.cause for f in OP_FAMILIES))  # the GPU's words are still there for a GPU


def _families(names):
    from surrobench.analysis.op_families import family_of

    return {family_of(n).name for n in names}


def test_a_cpu_diagnosis_has_no_gpu_word():
    ev = _evidence()
    small, large = replace(ev.result, shape_label="64"), _result(median_ms=80.0, size=128)
    half = _result(median_ms=6.0, precision="bf16")
    big_table = replace(
        _cpu_table(),
        ops=tuple(
            replace(o, self_cpu_us=o.self_cpu_us * (40 if o.name == "aten::mm" else 4)) for o in _cpu_table().ops
        ),
    )
    churn = replace(ev.result, peak_reserved_bytes=1 << 30, model="m2")
    evidence = [
        ev,
        replace(ev, label=large.label(), result=large, op_table=replace(big_table, total_us=big_table.total_us * 8)),
    ]
    found = diagnose_run(evidence, [small, large, half, churn], flops={})
    kinds = {f.kind for f in found}
    assert {"cpu_preprocess", "page_faults", "thread_oversubscription", "denormals", "memory_bound"} <= kinds
    assert {"precision_mismatch", "superlinear_scaling", "memory_pressure", "fragmented_ops"} <= kinds
    leaks = {f.kind: gpu_words(" ".join(_texts(f))) for f in found if gpu_words(" ".join(_texts(f)))}
    assert leaks == {}


def test_on_a_cpu_the_models_own_forward_is_compute_not_preprocessing():
    (prep,) = [f for f in diagnose_config(_evidence()) if f.kind == "cpu_preprocess"]
    assert "load_mesh" in prep.summary and "message_passing" not in prep.summary
    assert prep.estimated_gain_ms == pytest.approx(0.3 * 4.0)
    on_gpu = _evidence(result=replace(_result(), device="cuda"))
    (gpu_prep,) = [f for f in diagnose_config(on_gpu) if f.kind == "cpu_preprocess"]
    assert "message_passing" in gpu_prep.summary  # on a GPU host work in the forward keeps the device waiting
    assert words("cpu").offload in prep.action and words("cuda").offload in gpu_prep.action


def test_page_faults_per_step_are_read_and_their_remedy_named():
    (f,) = [f for f in diagnose_config(_evidence()) if f.kind == "page_faults"]
    assert f.evidence[0].value == pytest.approx(7000.0)  # 70,000 faults over a window of 10 steps
    assert f.estimated_gain_ms == pytest.approx(7.0e-3 * 1000) and "MALLOC_MMAP_THRESHOLD_" in f.action
    few = _evidence(system=_system(faults=10.0 * (PAGE_FAULTS_MIN_PER_STEP - 1)))
    assert "page_faults" not in {f.kind for f in diagnose_config(few)}
    on_gpu = _evidence(result=replace(_result(), device="cuda"))
    assert "page_faults" not in {f.kind for f in diagnose_config(on_gpu)}


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ({"torch_threads": 8, "usable_cpus": 2, "load_1m": 0.0}, "medium"),  # more threads than usable CPUs
        ({"torch_threads": 4, "usable_cpus": 4, "load_1m": 7.0}, "low"),  # 3 cores busy with another process
        ({"torch_threads": 2, "usable_cpus": 4, "load_1m": 3.0}, None),
        ({"torch_threads": 2, "usable_cpus": 2, "other_cpus": 0.03}, None),  # a trace of others' use frees both
        ({"torch_threads": 2, "usable_cpus": 2, "other_cpus": 0.9}, "low"),  # another process on a core
        ({"torch_threads": 4, "usable_cpus": 4, "load_1m": None}, None),
    ],
)
def test_threads_beyond_the_free_cores(host, expected):
    ev = _evidence(result=_result(**host))
    found = [f for f in diagnose_config(ev) if f.kind == "thread_oversubscription"]
    assert [f.severity for f in found] == ([expected] if expected else [])
    if found:
        assert found[0].remedies == ("threads",)


def test_subnormal_weights_or_inputs_are_a_finding():
    kinds = {f.kind for f in diagnose_config(_evidence(result=_result(subnormal_share=0.0)))}
    assert "denormals" not in kinds
    (f,) = [f for f in diagnose_config(_evidence()) if f.kind == "denormals"]
    assert f.evidence[0].value == pytest.approx(0.02) and "set_flush_denormal" in f.action


def test_host_facts_count_subnormals():
    import torch

    from surrobench.execution.host_facts import subnormal_share

    layer = torch.nn.Linear(4, 4)
    with torch.no_grad():
        layer.weight[0, :2] = 1e-40  # subnormal in fp32
    assert subnormal_share(layer, (torch.ones(2, 4),)) == pytest.approx(2 / (16 + 4 + 8))


def test_profile_and_diagnose_read_one_fragmented_share():
    """group_norm in tiny calls counts in reading 2 as its own part (never as elementwise), and diagnose's
    fragmented_ops states the same share as profile's reading."""
    from surrobench.analysis.op_readings import TINY_CALLS, read_table

    table = _cpu_table()
    table = replace(table, ops=tuple(replace(o, calls=100) if o.name == "aten::group_norm" else o for o in table.ops))
    ev = _evidence(op_table=table, profiled_step_ms=4.0)
    reading = read_table(ev.ops, "m", (1, 3, 64, 64)).fragmentation
    assert reading.by_category[TINY_CALLS] == pytest.approx(1 / len(OPS))
    assert reading.by_category["elementwise/activation"] == pytest.approx(
        ev.ops.category_shares["elementwise/activation"]
    )
    (found,) = [f for f in diagnose_config(ev) if f.kind == "fragmented_ops"]
    assert found.evidence[0].value == pytest.approx(reading.share)


def _proc_stat(busy_s: dict[int, float]) -> str:
    """A /proc/stat of one ``cpuN`` line per CPU N of ``busy_s`` (its user and system seconds, split 4:1; idle 1000 s,
    iowait 2 s, which count as not busy), below the first ``cpu`` line that sums them all."""
    hz = os.sysconf("SC_CLK_TCK")
    rows = {f"cpu{n}": (round(0.8 * s * hz), 0, round(0.2 * s * hz), 1000 * hz, 2 * hz) for n, s in busy_s.items()}
    rows = {"cpu ": tuple(map(sum, zip(*rows.values()))), **rows}
    return "".join(f"{name} {' '.join(map(str, ticks))} 0 0 0 0 0\n" for name, ticks in rows.items()) + "intr 1 2\n"


def test_the_other_processes_load_is_their_cpu_time_while_the_config_was_timed(tmp_path, monkeypatch):
    # the trial: 2 CPUs, 2 torch threads that kept 0.5 CPU busy, two other processes 0.9 each, a 1-minute load of
    # 2.3: the load less our threads says 0.3; /proc/stat less our own CPU time says 1.8 (cpu2, outside our
    # affinity mask, busy all the time, is no CPU of ours: the host-wide `cpu` line would say 2.8)
    stat = tmp_path / "stat"
    monkeypatch.setattr(host_facts_module, "PROC_STAT", stat)
    monkeypatch.setattr(host_facts_module.os, "sched_getaffinity", lambda pid: {0, 1})
    readings = iter(
        [SimpleNamespace(user=1.0, system=0.0, elapsed=100.0), SimpleNamespace(user=5.5, system=0.5, elapsed=110.0)]
    )
    monkeypatch.setattr(host_facts_module.os, "times", lambda: next(readings))
    stat.write_text(_proc_stat({0: 7, 1: 8, 2: 50}))
    since = host_facts_module.cpu_times()
    stat.write_text(_proc_stat({0: 19, 1: 19, 2: 60}))  # 23 s busy in 10 s on cpu0 and cpu1
    others = host_facts_module.other_cpus((since, host_facts_module.cpu_times()))
    assert others == pytest.approx(1.8)
    host = {"other_cpus": others, "torch_threads": 2, "usable_cpus": 2, "load_1m": 2.3}
    (f,) = [f for f in diagnose_config(_evidence(result=_result(**host))) if f.kind == "thread_oversubscription"]
    assert f.evidence[-1].value == pytest.approx(1.8) and "1 free core(s)" in f.summary
    stat.unlink()  # no /proc: no reading, and the finding falls back to the load less our threads
    assert host_facts_module.cpu_times() is None
    (old,) = [
        f
        for f in diagnose_config(_evidence(result=_result(**{**host, "other_cpus": None, "load_1m": 3.1})))
        if f.kind == "thread_oversubscription"
    ]
    assert old.evidence[-1].value == pytest.approx(1.1)  # the 1-minute load less our two threads


def test_a_cpu_outside_the_affinity_mask_busy_is_no_busy_host(tmp_path, monkeypatch):
    """A job pinned to cpu0 and cpu1 of a 4-CPU host, another job keeping cpu3 busy all the while: the CPUs other
    processes kept busy are counted on cpu0 and cpu1 alone, as ``usable_cpus`` counts them: 0 of 2, not busy."""
    from surrobench.execution.env import busy_host_warning

    stat = tmp_path / "stat"
    monkeypatch.setattr(host_facts_module, "PROC_STAT", stat)
    monkeypatch.setattr(host_facts_module.os, "sched_getaffinity", lambda pid: {0, 1})
    readings = iter([SimpleNamespace(user=0.0, system=0.0, elapsed=0.0), SimpleNamespace(user=1, system=0, elapsed=10)])
    monkeypatch.setattr(host_facts_module.os, "times", lambda: next(readings))
    stat.write_text(_proc_stat({0: 0, 1: 0, 2: 0, 3: 0}))
    since = host_facts_module.cpu_times()
    stat.write_text(_proc_stat({0: 1, 1: 0, 2: 0, 3: 10}))  # our 1 s on cpu0; 10 s of another's on cpu3
    extra = {
        "other_cpus": host_facts_module.other_cpus((since, host_facts_module.cpu_times())),
        "usable_cpus": host_facts_module.usable_cpus(),
    }
    assert extra == {"other_cpus": pytest.approx(0.0), "usable_cpus": 2}
    assert host_facts_module.busy_others(extra) is None
    assert busy_host_warning(None, 4, 2, [extra]) is None
    monkeypatch.setattr(host_facts_module.os, "sched_getaffinity", lambda pid: {8, 9})  # numbered otherwise: unread
    assert host_facts_module.cpu_times() is None


def test_a_window_too_short_for_the_ticks_of_proc_stat_is_not_read():
    """60 ms of a steady 1.0 CPU of others read 0 to 1.17 (10 ms ticks): such a window is no reading; (wall s, busy
    CPU s, our CPU s) readings as :func:`~surrobench.execution.host_facts.cpu_times` gives them."""
    short = ((0.0, 0.0, 0.0), (0.06, 0.07, 0.0))
    assert host_facts_module.other_cpus(short) is None
    assert host_facts_module.other_cpus(((0.0, 0.0, 0.0), (0.3, 0.3, 0.0))) == pytest.approx(1.0)
    assert host_facts_module.other_cpus(short, ((1.0, 1.0, 0.0), (1.3, 1.3, 0.0))) == pytest.approx(0.37 / 0.36)


def test_a_small_call_just_under_the_cutoff_never_reads_as_the_cutoff_nor_as_dispatch():
    """A hash-grid model's aten::index ran 19.96 us a call: printed "20.0 us each (under 20 us: dispatch ...)"."""
    from surrobench.analysis.detect_ops import fragmented_ops
    from surrobench.analysis.thresholds import DEFAULT_THRESHOLDS

    rows = tuple(OpStat(n, categorize(n), 100, 0.0, 0.0, 0.25, 1996.0) for n in ("aten::add", "aten::mul", "aten::cat"))
    table = OpTable(
        (*rows, OpStat("aten::mm", categorize("aten::mm"), 1, 0.0, 0.0, 0.25, 1996.0)), "cpu", 7984.0, 1, "profiler"
    )
    found = fragmented_ops(_evidence(op_table=table, result=_result(median_ms=8.0)), DEFAULT_THRESHOLDS)
    small = [e.text for e in found.evidence if e.unit == "calls"]
    assert small and all("19.96 us each (a small call, under 20 us)" in t and "dispatch" not in t for t in small)


def test_optimize_notes_on_a_cpu_name_data_dependent_ops_in_cpu_terms():
    # a fresh-user trial read "host synchronizations in forward: nonzero x24" on a CPU optimize (a GPU idea)
    from collections import Counter
    from types import SimpleNamespace

    from surrobench.collect.probe import ProbeFacts
    from surrobench.tune.config import _notes

    def notes(device: str) -> str:
        request = SimpleNamespace(rounds=3, rebuildable=True, process_pairs=0)
        probe = ProbeFacts(syncs=Counter({"nonzero": 24}))
        bench = SimpleNamespace(
            request=request, probe=probe, warmup=2, iters=10, fp64_note=None, device=device, db=None
        )
        search = SimpleNamespace(bench=bench, head_to_head=None, unconfirmed=None, confirm_interrupted=False)
        search.__dict__.update(confirm_error=None, confirm_rounds=None, processes=None, unprofiled=(), own=())
        return " ".join(_notes(search))

    assert "nonzero x24" in notes("cpu") and gpu_words(notes("cpu")) == []
    assert "nonzero x24" in notes("cuda") and "host synchronization" in notes("cuda").lower()


def _solver_table(lu_share: float, lu_calls: int = 6, shapes: tuple[str, ...] = ()) -> OpTable:
    """A trial's implicit solver step (4 ms of op time): a dense LU factorization (category other, ``lu_calls`` calls
    on ``shapes``) and copies."""
    rest = 0.15  # each: under severity_high_fraction, so the LU is the only op that can be named
    shares = {"aten::linalg_lu_factor_ex": (lu_share, lu_calls), "aten::copy_": (rest, 54), "aten::conv1d": (rest, 4)}
    shares["aten::linalg_lu_solve"] = (rest, 6)
    rows = [OpStat(n, categorize(n), c, 0.0, 0.0, s, 4000.0 * s) for n, (s, c) in shares.items()]
    rows[0] = replace(rows[0], input_shapes=shapes)
    return OpTable(tuple(sorted(rows, key=lambda o: -o.share)), "cpu", 4000.0, 1, "profiler", has_shapes=bool(shapes))


def test_the_op_holding_the_time_is_named_where_no_finding_names_it():
    (hot,) = [f for f in diagnose_config(_evidence(op_table=_solver_table(0.45))) if f.kind == "hot_op"]
    assert "aten::linalg_lu_factor_ex" in hot.summary and hot.evidence[0].value == pytest.approx(0.45)
    assert hot.remedies == () and hot.estimated_gain_ms is None and hot.severity == "high"  # 1.8 of 4 ms
    assert gpu_words(" ".join(_texts(hot))) == []
    under = diagnose_config(_evidence(op_table=_solver_table(0.2)))  # under severity_high_fraction of op time
    assert "hot_op" not in {f.kind for f in under}
    named = _solver_table(0.45)  # the same share in a GroupNorm: the memory-bound finding names it, no second one
    rows = tuple(
        replace(o, name="aten::group_norm", category="normalization") if o.share > 0.4 else o for o in named.ops
    )
    named = replace(named, ops=rows)
    assert "hot_op" not in {f.kind for f in diagnose_config(_evidence(op_table=named))}
    comms = tuple(replace(o, name="record_param_comms", category="communication") if o.share > 0.4 else o for o in rows)
    assert "hot_op" not in {f.kind for f in diagnose_config(_evidence(op_table=replace(named, ops=comms)))}  # ranks'


@pytest.mark.parametrize("calls, short", [(6, False), (400, True)])
def test_the_hot_ops_action_reads_its_calls_per_step_and_time_per_call(calls, short):
    """The hot op's action read the same whatever its calls: now its evidence holds calls per step and ms per call,
    and calls under ``cpu_small_call_us`` each (400 LU calls of 4.5 us: mostly their dispatch) get "fewer calls",
    longer ones (6 of 300 us) a cheaper computation on the input shapes the table recorded."""
    from surrobench.analysis.thresholds import DEFAULT_THRESHOLDS

    table = _solver_table(0.45, calls, shapes=("[[64, 64]]",))
    (hot,) = [f for f in diagnose_config(_evidence(op_table=table)) if f.kind == "hot_op"]
    got = {e.unit: e.value for e in hot.evidence}
    assert got["calls per step"] == calls and got["ms per call"] == pytest.approx(1.8 / calls)
    assert (got["ms per call"] * 1e3 < DEFAULT_THRESHOLDS.cpu_small_call_us) is short
    assert hot.action.startswith("call aten::linalg_lu_factor_ex fewer times") is short
    assert ("[[64, 64]]" in hot.action) is not short and gpu_words(" ".join(_texts(hot))) == []
