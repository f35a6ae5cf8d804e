import numpy as np
import pytest
import torch

from conftest import RaisesOn, ReturnsNaN, TinySurrogate
from surrobench.errors import UsageError
from surrobench.execution.config import ExecConfig, numeric_settings
from surrobench.execution.runner import prepare_model, run_config
from surrobench.workload.spec import ShapeSpec


def _cfg(batch=2, mode="eager", precision="fp32", iters=12, warmup=2):
    return ExecConfig(
        model="tiny",
        shape=ShapeSpec(size=8),
        batch=batch,
        precision=precision,
        device="cpu",
        mode=mode,
        warmup=warmup,
        iters=iters,
        cudnn_benchmark=False,
        seed=0,
        input_sets=3,
    )


def test_ok_config_has_all_measurements(tiny):
    r = run_config(_cfg(), prepare_model(tiny, "cpu", 0))
    assert r.status == "ok" and r.error is None
    assert r.input_shape == (2, 2, 8, 8)
    assert len(r.samples_ms) == 12 and all(s > 0 for s in r.samples_ms)
    assert r.latency_ms.min <= r.latency_ms.median <= r.latency_ms.max
    assert r.device_ms is None  # CPU: host clock only
    assert r.cold_start_ms > 0
    assert r.samples_per_s == pytest.approx(2 / (r.latency_ms.median / 1000))
    assert r.points_per_s == pytest.approx(r.samples_per_s * 64)
    assert r.peak_mem_bytes >= 0 and r.peak_reserved_bytes is None
    assert r.extra["matmul_allow_tf32"] is False and r.extra["input_sets"] == 3


def test_oom_and_error_are_recorded_and_the_sweep_goes_on():
    oom = TinySurrogate(
        lambda: RaisesOn(2, torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 8.00 GiB"))
    )
    prepared = prepare_model(oom, "cpu", 0)
    results = [run_config(cfg, prepared) for cfg in (_cfg(1), _cfg(2), _cfg(4))]
    assert [r.status for r in results] == ["ok", "oom", "ok"]
    assert "OutOfMemoryError" in results[1].error  # the type raised; the status "oom" above
    assert results[1].latency_ms is None
    assert results[1].input_shape == (2, 2, 8, 8)  # the failed config keeps its key for compare


def test_a_failed_config_keeps_its_settings_as_a_timed_one_does():
    from dataclasses import replace

    from surrobench.execution.runner import failed_result

    failed = failed_result(replace(_cfg(), threads=2, channels_last=True), "error", RuntimeError("boom"))
    assert failed.extra["threads"] == 2 and failed.extra["channels_last"] is True
    assert failed.error == "RuntimeError: boom"


def test_compare_pairs_an_ok_config_with_its_later_oom_as_a_regression():
    from surrobench.results.compare import match_configs, compare_config

    ok = run_config(_cfg(2), prepare_model(TinySurrogate(), "cpu", 0))
    oom = run_config(
        _cfg(2), prepare_model(TinySurrogate(lambda: RaisesOn(2, torch.cuda.OutOfMemoryError("oom"))), "cpu", 0)
    )
    pairs, only_base, only_new = match_configs([ok], [oom])
    assert len(pairs) == 1 and not only_base and not only_new
    assert compare_config(*pairs[0]).verdict == "regressed"

    broken = prepare_model(TinySurrogate(lambda: RaisesOn(4, ValueError("bad reshape\nsecond line"))), "cpu", 0)
    r = run_config(_cfg(4), broken)
    assert r.status == "error" and r.error.startswith("ValueError: bad reshape (at conftest.py:")


def test_nan_output_is_flagged_but_timings_kept():
    r = run_config(_cfg(), prepare_model(TinySurrogate(ReturnsNaN), "cpu", 0))
    assert r.status == "nonfinite" and "not finite" in r.error and r.extra["failure_cause"] == "nonfinite_output"
    assert r.extra["nonfinite"] == {
        "tensor": "output",
        "nonfinite_values": 256,
        "numel": 256,
        "input_set": 0,
        "call": 0,
        "phase": "first",
    }
    assert r.latency_ms is not None and len(r.samples_ms) == 12


def test_cudagraph_on_cpu_is_a_usage_error(tiny):
    with pytest.raises(UsageError, match="cuda"):
        run_config(_cfg(mode="cudagraph"), prepare_model(tiny, "cpu", 0))


def test_bf16_autocast_runs_on_cpu(tiny):
    r = run_config(_cfg(precision="bf16"), prepare_model(tiny, "cpu", 0))
    assert r.status == "ok", r.error


def test_numeric_settings_are_pinned_and_restored():
    before = torch.backends.cuda.matmul.allow_tf32
    with numeric_settings("tf32", cudnn_benchmark=True):
        assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.benchmark
    with numeric_settings("fp16", cudnn_benchmark=False):
        assert not torch.backends.cuda.matmul.allow_tf32
    assert torch.backends.cuda.matmul.allow_tf32 == before


def test_same_seed_same_inputs_across_precisions(tiny):
    from surrobench.workload.inputs import make_input_sets

    a = make_input_sets(tiny, 2, ShapeSpec(size=4), device="cpu", seed=5, n_sets=3)
    b = make_input_sets(tiny, 2, ShapeSpec(size=4), device="cpu", seed=5, n_sets=3)
    assert all(torch.equal(x[0], y[0]) for x, y in zip(a, b))
    assert not torch.equal(a[0][0], a[1][0])  # the rotating sets differ from each other


def test_compile_mode_runs_on_cpu(tiny):
    r = run_config(_cfg(mode="compile", iters=5, warmup=1), prepare_model(tiny, "cpu", 0))
    assert r.status == "ok", r.error
    # the cold start holds the compilation, so it dwarfs a steady-state call
    assert r.cold_start_ms > 10 * r.latency_ms.median


def test_rounds_merge_samples_and_keep_the_first_cold_start(tiny):
    from surrobench.execution.runner import merge_rounds

    prepared = prepare_model(tiny, "cpu", 0)
    rounds = [run_config(_cfg(iters=6), prepared) for _ in range(3)]
    merged = merge_rounds(rounds)
    assert merged.samples_ms == rounds[0].samples_ms + rounds[1].samples_ms + rounds[2].samples_ms
    assert merged.iters == 18 and merged.extra["rounds"] == 3
    assert merged.cold_start_ms == rounds[0].cold_start_ms
    assert merged.latency_ms.median == pytest.approx(float(np.median(merged.samples_ms)))
    assert merged.peak_mem_bytes == max(r.peak_mem_bytes for r in rounds)
    assert merge_rounds(rounds[:1]) is rounds[0]


def test_run_reads_other_processes_cpus_over_its_timed_calls_alone(monkeypatch):
    """The busy-host reading opens after the step's first calls and warm-up (a compiler's workers building it are
    other processes) and closes after the timed calls; merged rounds carry its mean."""
    from surrobench.execution import timing
    from surrobench.execution.runner import merge_rounds

    events: list[str] = []

    class Logged(torch.nn.Conv2d):
        def forward(self, x):
            events.append("call")
            return super().forward(x)

    wall = iter(range(0, 1000, 10))  # 10 s a reading; 15 CPU s busy on our CPUs then 5, none of them ours

    def reading():
        events.append("read")
        busy = next(wall)
        return float(busy), 1.5 * busy if busy < 20 else 0.5 * busy + 20.0, 0.0

    monkeypatch.setattr(timing, "cpu_times", reading)
    monkeypatch.setattr("surrobench.execution.runner.usable_cpus", lambda: 2)
    prepared = prepare_model(TinySurrogate(lambda: Logged(2, 1, 1)), "cpu", 0)
    first = run_config(_cfg(iters=4, warmup=2), prepared)
    # 1 cold call, 2 more input sets checked, 2 warm-up calls; then the 4 timed; then the 3 sets checked again
    assert events == ["call"] * 5 + ["read"] + ["call"] * 4 + ["read"] + ["call"] * 3
    second = run_config(_cfg(iters=4, warmup=2), prepared)
    assert (first.extra["other_cpus"], second.extra["other_cpus"], first.extra["usable_cpus"]) == (1.5, 0.5, 2)
    assert merge_rounds([first, second]).extra["other_cpus"] == pytest.approx(1.0)


def test_the_hosts_submission_time_is_stored_where_it_was_measured(tiny):
    from dataclasses import replace

    from surrobench.execution.memory import PeakMemory
    from surrobench.execution.runner import merge_rounds, timed_result
    from surrobench.execution.timing import TimedSamples

    cfg = _cfg()
    memory = PeakMemory(peak_bytes=0, reserved_bytes=None, alloc_retries=None)
    latency = np.array([1.0, 1.2, 1.1])
    on_cpu = timed_result(cfg, (), 1.0, 5.0, TimedSamples(latency, None), memory)
    assert on_cpu.host_submit_ms is None  # the CPU path reads the host clock alone
    submitted = TimedSamples(latency, latency - 0.1, np.array([0.4, 0.9, 0.5]))
    r = timed_result(cfg, (), 1.0, 5.0, submitted, memory)
    assert r.host_submit_ms == pytest.approx(0.5)  # the median, not the mean
    rounds = [
        r,
        replace(r, extra={**r.extra, "host_submit_ms": 0.7}),
        replace(r, extra={**r.extra, "host_submit_ms": 0.6}),
    ]
    assert merge_rounds(rounds).host_submit_ms == pytest.approx(0.6)


def test_a_failed_round_fails_the_merged_config(tiny):
    from surrobench.execution.runner import merge_rounds

    ok = run_config(_cfg(iters=3), prepare_model(tiny, "cpu", 0))
    oom = run_config(
        _cfg(2), prepare_model(TinySurrogate(lambda: RaisesOn(2, torch.cuda.OutOfMemoryError("oom"))), "cpu", 0)
    )
    merged = merge_rounds([ok, oom])
    assert merged.status == "oom" and merged.extra["rounds"] == 2


def test_clock_drop_warning_names_the_slow_configs():
    from surrobench.execution.env import clock_drop_warning

    assert clock_drop_warning([("a", 1980), ("b", 1965)]) is None  # normal boost steps
    warning = clock_drop_warning([("a", 1980), ("b", 1410), ("c", 1980)])
    assert warning is not None and "b (1410 MHz)" in warning and "a (" not in warning
    assert clock_drop_warning([]) is None


def test_nvml_handle_is_the_gpu_torch_uses_not_index_0(monkeypatch):
    """NVML numbers all GPUs; with CUDA_VISIBLE_DEVICES=3 torch's device 0 is NVML's GPU 3."""
    from types import SimpleNamespace

    from surrobench.execution import env

    asked = {}
    fake = SimpleNamespace(
        nvmlDeviceGetHandleByUUID=lambda uuid: asked.setdefault("uuid", uuid),
        nvmlDeviceGetHandleByIndex=lambda i: asked.setdefault("index", i),
    )
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: SimpleNamespace(uuid="abc-123"))
    env._handle(fake)
    assert asked == {"uuid": "GPU-abc-123"}


def test_recipe_settings_that_changed_nothing_are_named():
    from dataclasses import replace

    from surrobench.execution.env import idle_setting_warnings
    from surrobench.records.config import InputSpec

    ok = run_config(_cfg(2), prepare_model(TinySurrogate(), "cpu", 0))
    assert idle_setting_warnings([ok]) == []
    flat = replace(
        ok,
        input_shape=(2, 64, 3),
        inputs=(InputSpec((2, 64, 3), "float32"),),
        extra={**ok.extra, "channels_last": True},
    )
    grid = replace(
        ok,
        input_shape=(2, 3, 8, 8),
        inputs=(InputSpec((2, 3, 8, 8), "float32"),),
        extra={**ok.extra, "channels_last": True},
    )
    cpu_graphs = replace(ok, mode="compile", extra={**ok.extra, "compile_mode": "reduce-overhead"})
    warnings = idle_setting_warnings([flat, grid, cpu_graphs])
    assert len(warnings) == 2 and "not 4-D" in warnings[0] and flat.label() in warnings[0]
    assert grid.label() not in warnings[0] and "default torch.compile" in warnings[1]


@pytest.mark.parametrize("hook_input", ["torch.randn(batch, 4)", "torch.randn(batch, shape, 4)"])
def test_a_model_without_points_has_no_points_per_second(tmp_path, hook_input):
    """A user model with an inputs hook, a feature vector or a point cloud (B, N, C): its layout is its own, so
    points/s is None in the record (``-`` in the table: docs/run.md), not a copy of samples/s nor a guess at N;
    rounds merge it as None too."""
    from surrobench.execution.runner import merge_rounds
    from surrobench.report.cells import result_cells
    from surrobench.workload.loader import resolve_model

    path = tmp_path / "vec.py"
    path.write_text(
        "import torch\n\ndef build():\n    return torch.nn.Linear(4, 2)\n\n"
        f"def example_inputs(batch, shape):\n    return {hook_input}\n"
    )
    spec = f"{path}:build"
    cfg = ExecConfig(spec, ShapeSpec(size=4), 2, "fp32", "cpu", "eager", 1, 3, False, 0, 1)
    r = run_config(cfg, prepare_model(resolve_model(spec), "cpu", 0))
    assert r.status == "ok" and r.samples_per_s > 0 and r.points_per_s is None
    assert result_cells(r)["points_per_s"] == "-"
    assert merge_rounds([r, r]).points_per_s is None
