"""No torch.compile for a step that runs torch.fft (surrobench.analysis.fft_compile)."""

from __future__ import annotations

from surrobench.analysis.fft_compile import NOT_COMPILE, runs_fft, without_compile
from surrobench.records.findings import Clause, Evidence, Finding

EV = (Evidence("timeline", "GPU idle 0.3 ms per step", 0.3, "ms"),)


def _finding(*clauses: Clause) -> Finding:
    return Finding("launch_bound", "medium", "GPU idle", EV, clauses, 0.3, "fno2d 8x3x256x256 b8 fp32 eager")


def test_only_torch_fft_ops_count_as_running_torch_fft():
    assert runs_fft(["aten::conv2d", "aten::_fft_r2c", None])
    # cuDNN's FFT convolution and a kernel no op launched are not torch.fft
    assert not runs_fft(["aten::cudnn_convolution", None, "aten::fft_helper_name_of_another_library"])


def test_compile_clauses_give_way_to_one_reason_and_the_other_remedies_stay():
    graph = Clause("replay the step as a CUDA graph", ("cudagraph",))
    finding = _finding(
        graph,
        Clause("or torch.compile(mode='reduce-overhead')", ("compile-reduce-overhead",)),
        Clause("fuse with TF32 on", ("tf32", "compile"), stacked=True),
        Clause("give each launch more work (larger batch)"),
    )
    (out,) = without_compile([finding])
    assert out.remedies == ("cudagraph",) and out.remedy_stacks == ()
    assert out.clauses == (graph, NOT_COMPILE, Clause("give each launch more work (larger batch)"))
    assert (out.kind, out.estimated_gain_ms, out.evidence) == (finding.kind, finding.estimated_gain_ms, EV)


def test_a_finding_that_names_no_compile_is_left_as_it_is():
    finding = _finding(Clause("run in TF32", ("tf32",)))
    assert without_compile([finding]) == [finding]


def test_the_estimated_path_drops_compile_for_an_fft_step():
    from synthetic import config, latency_samples

    from surrobench.analysis.diagnose import diagnose_config
    from surrobench.analysis.evidence import ConfigEvidence
    from surrobench.records.ops import OpStat, OpTable

    elementwise = (
        OpStat("aten::add", "elementwise/activation", 2000, 380.0, 380.0, 0.38, 380.0),
        OpStat("aten::native_group_norm", "normalization", 2000, 110.0, 110.0, 0.11, 110.0),
        OpStat("aten::conv2d", "convolution", 10, 500.0, 500.0, 0.50, 500.0),
    )
    fft = OpStat("aten::_fft_r2c", "fft", 10, 10.0, 10.0, 0.01, 10.0)
    result = config(latency_samples(1.0, 0.001))

    def remedies(ops) -> set[str]:
        ev = ConfigEvidence(label="m", result=result, op_table=OpTable(ops, "cpu", 1000.0, 1, "profiler"))
        return {r for f in diagnose_config(ev) for r in f.remedies}

    assert "compile" in remedies(elementwise)  # small elementwise ops: fuse them
    assert "compile" not in remedies((*elementwise, fft))
