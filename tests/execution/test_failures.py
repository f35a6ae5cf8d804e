import pytest
import torch
from conftest import TinySurrogate, exec_config
from torch import nn

from surrobench.errors import ModelError
from surrobench.execution.failures import FAILURE_CAUSES, explain_failure, failure_extra, failure_label
from surrobench.execution.runner import error_text, failed_result, prepare_model, run_config
from surrobench.report.cells import failure_text, result_cells

# What PyTorch and CUDA said on the H200 (FNO bf16, FNO fp16 at 96x96, a GNN under graph capture, a
# factorized FNO under torch.compile) and on the CPU.
REAL_MESSAGES = {
    "RuntimeError: Unsupported dtype BFloat16": "fft_no_bf16",
    "RuntimeError: cuFFT only supports dimensions whose sizes are powers of two when computing in half precision, "
    "but got a signal size of[96, 96]": "fft_half_size",
    "RuntimeError: Unsupported dtype Half": "fft_no_half",
    "RuntimeError: CUDA error: operation failed due to a previous error during capture": "graph_capture_sync",
    "RuntimeError: CUDA error: operation not permitted when stream is capturing": "graph_capture_sync",
    "InternalTorchDynamoError: NotImplementedError: ": "dynamo_unsupported",
    "BackendCompilerFailed: backend='inductor' raised: LoweringException: complex128 not supported": "inductor_complex",
    "OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB": "out_of_memory",
    "RuntimeError: [enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: not enough memory: you tried to "
    "allocate 68719476736 bytes.": "out_of_memory",
    "model output is not finite: 3 of 256 values are NaN or Inf": "nonfinite_output",
}


@pytest.mark.parametrize("message, cause", REAL_MESSAGES.items())
def test_known_messages_get_their_cause(message, cause):
    got = explain_failure(message)
    assert got.cause_id == cause
    assert got.line == {c: line for c, _, line in FAILURE_CAUSES}[cause].format(cuda_graph=" or as a CUDA graph")
    assert "\n" not in got.line


@pytest.mark.parametrize("device, graph", [("cpu", False), ("cuda", True)])
def test_a_failed_compile_suggests_a_cuda_graph_on_cuda_only(device, graph):
    for message, cause in (
        ("torch._dynamo.exc.Unsupported: x", "dynamo_unsupported"),
        ("inductor: complex", "inductor_complex"),
    ):
        result = failed_result(exec_config(device=device, mode="compile"), "error", RuntimeError(message))
        assert result.extra["failure_cause"] == cause
        assert ("CUDA graph" in result.extra["failure_explained"]) is graph


def test_unknown_failure_keeps_its_first_line_and_complex_outside_compile_is_not_inductor():
    assert explain_failure("ValueError: bad reshape\nsecond line") == ("unknown", "ValueError: bad reshape")
    assert explain_failure("TypeError: complex input expected").cause_id == "unknown"
    assert explain_failure(None) == ("unknown", "")
    cause_id, line = explain_failure(NotImplementedError("not done"))  # a tuple, unpacked by callers
    assert cause_id == "unknown" and line == "NotImplementedError: not done"


def test_cause_is_found_in_the_exception_chain():
    try:
        try:
            raise RuntimeError("CUDA error: operation not permitted when stream is capturing")
        except RuntimeError as inner:
            raise ValueError("step failed") from inner
    except ValueError as exc:
        assert explain_failure(exc).cause_id == "graph_capture_sync"


class _BF16Fft(nn.Module):
    def forward(self, x):
        return torch.fft.rfft2(x.to(torch.bfloat16)).abs()


def test_runner_records_the_explained_cause_and_keeps_the_original_error():
    cfg = exec_config()
    r = run_config(cfg, prepare_model(TinySurrogate(_BF16Fft), "cpu", 0))
    line = _BF16Fft.forward.__code__.co_firstlineno + 1  # the model's own line, not torch's
    raised = f"RuntimeError: Unsupported dtype BFloat16 (at test_failures.py:{line}, in forward)"
    assert r.status == "error" and r.error == raised
    assert r.extra == failure_extra(r.error)
    assert r.extra["failure_cause"] == "fft_no_bf16"
    assert r.to_json()["error"] == raised
    text = failure_text(r)
    assert text.startswith("the FFT library has no bf16") and text.endswith(f"[{raised}]")
    assert result_cells(r)["status"] == f"error: {text}"


def test_a_model_error_is_labelled_by_its_message_and_names_the_models_exception():
    """The user's model failed: the label is the model's failure, not the usage error it is a kind of."""
    failure = ModelError("model m.py:build: factory build() raised ValueError: boom")
    failure.__cause__ = ValueError("boom")  # as the loader raises it: ``from`` the model's exception
    assert failure_label(failure) == error_text(failure) == str(failure)
    assert explain_failure(failure) == ("unknown", str(failure))
    assert failure_label(ValueError("boom")) == error_text(ValueError("boom\nmore")) == "ValueError: boom"


class _HugeCpuAllocation(nn.Module):
    """A forward whose allocation the CPU allocator refuses at once (1 PiB: more than any host's memory)."""

    def forward(self, x):
        return x + torch.empty(2**50, dtype=torch.uint8).sum()


def test_a_failed_cpu_allocation_is_stored_as_oom():
    r = run_config(exec_config(), prepare_model(TinySurrogate(_HugeCpuAllocation), "cpu", 0))
    assert "DefaultCPUAllocator" in r.error  # the allocator's own RuntimeError, kept as raised
    assert r.status == "oom" and r.extra["failure_cause"] == "out_of_memory"


@pytest.mark.parametrize(
    "message, op, dtype",
    [
        (
            "RuntimeError: Expected both inputs to be Half, Float or Double tensors but got BFloat16 and BFloat16",
            "",
            "BFloat16",
        ),
        ("""RuntimeError: "addmm_impl_cpu_" not implemented for 'Half'""", " (addmm_impl_cpu_)", "Half"),
        ("RuntimeError: linalg.inv: Low precision dtypes not supported. Got BFloat16", " (linalg.inv)", "BFloat16"),
    ],
)
def test_a_precision_an_op_has_no_kernel_for_is_an_unsupported_dtype_naming_the_op_it_names(message, op, dtype):
    got = explain_failure(message, "cpu")
    assert got.cause_id == "unsupported_dtype" and got.line.startswith(f"an op{op} has no {dtype} kernel")


def test_a_dtype_an_op_has_no_kernel_for_outside_the_half_precisions_is_not_a_precision_s():
    assert explain_failure("""NotImplementedError: "GeluKernelImpl" not implemented for 'Long'""").cause_id == "unknown"


def test_a_models_error_names_the_models_line_not_torchs():
    """An error raised inside torch (a Linear's shape check) is placed at the model's line that called it; an
    exception raised by no frame outside torch and surrobench carries no place."""

    class Mismatched(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(4, 3)

        def forward(self, x):
            return self.linear(x)

    try:
        Mismatched()(torch.ones(2, 5))
    except RuntimeError as exc:
        text = error_text(exc)
    line = Mismatched.forward.__code__.co_firstlineno + 1
    assert text.startswith("RuntimeError: mat1 and mat2") and text.endswith(f"(at test_failures.py:{line}, in forward)")
    assert error_text(ValueError("boom")) == "ValueError: boom"  # never raised: no traceback


def test_a_factory_that_raises_is_labelled_and_stored_with_its_inputs(tmp_path):
    """A factory that raises builds no module, but its inputs need none (the ``(B, 3, N, N)`` layout here, else the
    hook): ``run`` and ``optimize`` record and label them as for a forward that raises (``1x3x8x8``), not the bare
    size asked (``8``)."""
    import surrobench
    from surrobench.api.optimize import optimize

    (tmp_path / "models.py").write_text("def build():\n    raise ValueError('x')\n")
    spec = f"{tmp_path / 'models.py'}:build"
    sweep = dict(shapes="8", batches="1", device="cpu", warmup=1, iters=3, threads=1)
    (result,) = surrobench.benchmark(spec, db=tmp_path / "r.db", **sweep).results
    assert (result.status, result.input_shape) == ("error", (1, 3, 8, 8))
    labels = []
    report = optimize(spec, db=tmp_path / "r.db", budget_s=1.0, processes=0, on_config=labels.append, **sweep)
    assert report.configs[0].baseline.input_shape == (1, 3, 8, 8)
    assert labels == [result.label()] and result.shape_text() == "1x3x8x8"
