"""perf stat CSV, perf report and py-spy flame graph parsing on output captured on this project's VM
(``tests/fixtures/perf/``), plus one hand-made bare-metal sample where the PMU counts."""

from __future__ import annotations

from pathlib import Path

import pytest

from surrobench.collect.perf_parse import (
    NOT_COUNTED,
    NOT_SUPPORTED,
    PERF_EVENTS,
    PerfAccess,
    parse_flamegraph_svg,
    parse_perf_report,
    parse_stat_csv,
    perf_access,
    permission_reason,
    summarize_counters,
    unavailable_reason,
)

FIXTURES = Path(__file__).parent.parent / "fixtures" / "perf"
VM = PerfAccess(paranoid=2, virtualized=True)
METAL = PerfAccess(paranoid=2, virtualized=False)


def _read(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_vm_window_counts_software_events_and_explains_hardware_ones():
    readings = parse_stat_csv(_read("stat_fno2d_window_vm.csv"))
    assert [r.event for r in readings] == list(PERF_EVENTS)
    summary = summarize_counters(readings, VM)
    assert summary.counters["task-clock"] == pytest.approx(12198.56)
    assert summary.counters["context-switches"] == 4432 and summary.counters["page-faults"] == 118772
    assert summary.counters["cycles"] is None and summary.ipc is None and summary.cache_miss_rate is None
    assert set(summary.unavailable) == {
        "cycles",
        "instructions",
        "cache-references",
        "cache-misses",
        "branches",
        "branch-misses",
    }
    assert all("virtual machine" in reason for reason in summary.unavailable.values())
    assert summary.multiplexed == {}


def test_never_enabled_window_is_not_counted():
    readings = parse_stat_csv(_read("stat_never_enabled_vm.csv"))
    statuses = {r.event: r.status for r in readings}
    assert statuses["cycles"] == NOT_SUPPORTED and statuses["task-clock"] == NOT_COUNTED
    summary = summarize_counters(readings, VM)
    assert summary.counters["task-clock"] is None
    assert summary.unavailable["task-clock"].startswith("not counted")
    assert "virtual machine" in summary.unavailable["cycles"]


def test_bare_metal_sample_gives_ipc_miss_rates_and_multiplexing():
    summary = summarize_counters(parse_stat_csv(_read("stat_baremetal_handmade.csv")), METAL)
    assert summary.ipc == pytest.approx(1.5)
    assert summary.cache_miss_rate == pytest.approx(0.2)
    assert summary.branch_miss_rate == pytest.approx(0.01)
    assert summary.multiplexed == {"cache-references": 0.625, "cache-misses": 0.625}
    assert list(summary.unavailable) == ["L1-dcache-load-misses"]


def test_event_modifiers_and_hybrid_pmus_add_up():
    text = "100,,cpu_core/cycles/,1,100.00,,\n50,,cpu_atom/cycles/,1,100.00,,\n300,,instructions:u,1,100.00,,\n"
    summary = summarize_counters(parse_stat_csv(text), METAL)
    assert summary.counters == {"cycles": 150.0, "instructions": 300.0}
    assert summary.ipc == pytest.approx(2.0)


def test_reasons_distinguish_vm_pmu_and_permission():
    (hw,) = parse_stat_csv("<not supported>,,cycles,0,100.00,,")
    (sw,) = parse_stat_csv("<not supported>,,page-faults,0,100.00,,")
    assert hw.status == NOT_SUPPORTED and "virtual machine" in unavailable_reason(hw, VM)
    assert "PMU" in unavailable_reason(hw, METAL) and "virtual" not in unavailable_reason(hw, METAL)
    assert unavailable_reason(sw, VM) == "not supported by this kernel"
    refused = "Error:\nAccess to performance monitoring and observability operations is limited.\n"
    reason = permission_reason(refused, PerfAccess(paranoid=3, virtualized=False))
    assert reason.startswith("perf_event_paranoid=3") and "CAP_PERFMON" in reason
    assert permission_reason("Events disabled\n", VM) is None


def test_perf_access_reads_paranoid_and_hypervisor_flag(tmp_path):
    (tmp_path / "sys/kernel").mkdir(parents=True)
    (tmp_path / "sys/kernel/perf_event_paranoid").write_text("3\n")
    (tmp_path / "cpuinfo").write_text("processor\t: 0\nflags\t\t: fpu vme sse2 hypervisor lahf_lm\n")
    access = perf_access(tmp_path)
    assert access.paranoid == 3 and access.virtualized
    (tmp_path / "cpuinfo").write_text("flags\t\t: fpu vme sse2\n")
    assert not perf_access(tmp_path).virtualized
    assert perf_access(tmp_path / "missing").paranoid is None


def test_perf_report_no_children():
    spots = parse_perf_report(_read("report_fno2d_cpu.txt"))
    assert len(spots) == 6
    assert spots[0].function == "libgomp.so.1 0x1de62" and spots[0].share == pytest.approx(0.4467)
    assert spots[0].self_share == spots[0].share and spots[0].source == "perf"
    assert spots[2].function.startswith("c10::function_ref<void (char**, long const*, long, long)>")
    assert spots[3].function == "exc_page_fault [kernel]" and spots[3].share == pytest.approx(0.0149)
    assert spots[4].function == "mkl_dft_def_xs_f64_1db"


def test_perf_report_with_children_column():
    text = "#\n    44.79%     0.00%  [.] 0x00007ff02421de62\n     6.82%     6.70%  libtorch_cpu.so  [.] at::mm\n"
    first, second = parse_perf_report(text)
    assert (first.share, first.self_share) == (pytest.approx(0.4479), 0.0)
    assert second.function == "at::mm" and second.self_share == pytest.approx(0.067)


def test_pyspy_flamegraph_inclusive_and_self_shares():
    spots, total = parse_flamegraph_svg(_read("pyspy_slow_mask.svg"))
    assert total == 471
    by_name = {s.function: s for s in spots}
    mask = by_name["make_boundary_mask (slow_mask_model.py)"]
    assert mask.share == pytest.approx(64 / 471) and mask.self_share == pytest.approx((64 - 44) / 471)
    listcomp = by_name["make_boundary_mask.<locals>.<listcomp> (slow_mask_model.py)"]
    assert listcomp.share == listcomp.self_share == pytest.approx(44 / 471)
    assert spots[0].share == 1.0 and all(a.share >= b.share for a, b in zip(spots, spots[1:]))
    assert sum(s.self_share for s in spots) == pytest.approx(1.0)  # every sample has exactly one top frame


def test_recursive_frames_count_once_and_bad_svg_raises():
    ns = 'xmlns="http://www.w3.org/2000/svg" xmlns:fg="http://github.com/jonhoo/inferno"'
    g = '<g><title>{} ({} samples, 1%)</title><rect x="0" y="{}" width="1" height="15" fg:x="{}" fg:w="{}"/></g>'
    svg = (
        f"<svg {ns}>"
        + g.format("all", 10, 0, 0, 10)
        + g.format("f (a.py)", 8, 16, 0, 8)
        + g.format("f (a.py)", 6, 32, 0, 6)
        + g.format("g (a.py)", 2, 32, 8, 2)
        + "</svg>"
    )
    spots, total = parse_flamegraph_svg(svg)
    f = next(s for s in spots if s.function == "f (a.py)")
    assert total == 10 and f.share == pytest.approx(0.8) and f.self_share == pytest.approx(0.8)
    with pytest.raises(ValueError):
        parse_flamegraph_svg(f"<svg {ns}></svg>")


def test_a_function_in_disjoint_and_nested_frames_covers_their_union():
    ns = 'xmlns="http://www.w3.org/2000/svg" xmlns:fg="http://github.com/jonhoo/inferno"'
    g = '<g><title>{} ({} samples, 1%)</title><rect x="0" y="{}" width="1" height="15" fg:x="{}" fg:w="{}"/></g>'
    svg = (
        f"<svg {ns}>"
        + g.format("all", 10, 0, 0, 10)
        + g.format("f (a.py)", 3, 16, 0, 3)
        + g.format("h (a.py)", 5, 16, 3, 5)
        + g.format("f (a.py)", 2, 32, 4, 2)  # f called again from h
        + g.format("f (a.py)", 1, 48, 4, 1)
        + "</svg>"
    )
    f = next(s for s in parse_flamegraph_svg(svg)[0] if s.function == "f (a.py)")
    assert f.share == pytest.approx(0.5)  # [0, 3) and [4, 6): 5 of 10 samples


def test_frames_under_a_module_call_are_the_models_own():
    ns = 'xmlns="http://www.w3.org/2000/svg" xmlns:fg="http://github.com/jonhoo/inferno"'
    g = '<g><title>{} ({} samples, 1%)</title><rect x="0" y="{}" width="1" height="15" fg:x="{}" fg:w="{}"/></g>'
    svg = (
        f"<svg {ns}>"
        + g.format("all", 10, 0, 0, 10)
        + g.format("step (s.py)", 10, 16, 0, 10)
        + g.format("prep (s.py)", 4, 32, 0, 4)  # host work of the step, outside the model
        + g.format("Module._call_impl (torch/nn/modules/module.py)", 6, 32, 4, 6)
        + g.format("message_passing (m.py)", 5, 48, 4, 5)  # the model's own layer
        + g.format("prep (s.py)", 1, 64, 4, 1)  # the same function called from the forward
        + "</svg>"
    )
    by_name = {s.function: s for s in parse_flamegraph_svg(svg)[0]}
    assert by_name["message_passing (m.py)"].model_share == pytest.approx(0.5)
    assert by_name["prep (s.py)"].share == pytest.approx(0.5) and by_name["prep (s.py)"].model_share == 0.1
    assert by_name["step (s.py)"].model_share == 0.0
