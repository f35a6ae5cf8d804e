"""``surrobench.api.benchmark.sweep_request``: the one path from typed options to a sweep, for the library
and the CLI alike (``WorkloadOptions.plan`` plans through it, ``sweep_plan``)."""

from __future__ import annotations

import os

import pytest
import torch

from surrobench.api.benchmark import sweep_request
from surrobench.errors import UsageError


def test_a_model_named_twice_runs_once_and_trust_pickle_is_carried():
    request = sweep_request("pinn-mlp, pinn-mlp", shapes="8", device="cpu", trust_pickle=True)
    assert request.models == ("pinn-mlp",) and request.trust_pickle is True


@pytest.mark.parametrize(
    ("keywords", "needle"),
    [
        ({"precisions": "tf32"}, "precisions tf32"),
        ({"seed": 2**64}, "seed 18446744073709551616"),
        ({"shapes": [10**23]}, "beyond any tensor size"),
        ({"shapes": [(1, 3, 2**63, 4)]}, "beyond any tensor size"),
        ({"batches": [2**63]}, "batches .9223372036854775808.: .* beyond any tensor size"),
        ({"iters": "5"}, "iters '5': must be an int"),
        ({"iters": 2.5}, "iters 2.5: must be an int"),
        ({"warmup": True}, "warmup True: must be an int"),
        ({"threads": 1.0}, "threads 1.0"),
        (
            {"threads": (os.cpu_count() or 1) + 1},
            f"threads {(os.cpu_count() or 1) + 1}: at most {os.cpu_count() or 1}",
        ),
        ({"seed": -1}, "seed -1"),
        ({"input_sets": 100, "warmup": 1, "iters": 3}, "input_sets 100: at most 5"),
    ],
)
def test_bad_input_is_a_usage_error_naming_its_parameter(keywords, needle):
    with pytest.raises(UsageError, match=needle):
        sweep_request("pinn-mlp", **{"shapes": "8", "device": "cpu", **keywords})


@pytest.mark.parametrize("device", ["cpu", "auto"])
@pytest.mark.parametrize(
    ("keywords", "parameter"),
    [({"precisions": "fp32,fp16"}, "precisions"), ({"cudnn_benchmark": True}, "cudnn_benchmark")]
    + [({"precisions": "tf32"}, "precisions"), ({"modes": "eager,cudagraph"}, "modes")],
)
def test_a_setting_optimize_holds_cuda_only_is_refused_on_the_cpu_as_tf32_is(keywords, parameter, device):
    """One rule of what applies to a device, optimize's remedies' devices: fp16 and cudnn_benchmark on the CPU were
    run and stored silently (``settings differ: BASE eager cudnn_benchmark``) where tf32 and cudagraph were refused;
    ``auto`` resolving to the CPU is refused alike. bf16 and a compile mode (warned of) still run there."""
    if device == "auto" and torch.cuda.is_available():
        pytest.skip("auto is the CPU only without a GPU")
    with pytest.raises(UsageError) as refused:
        sweep_request("pinn-mlp", shapes="8", device=device, **keywords)
    assert refused.value.parameter == parameter and refused.value.others == ("device",)
    assert sweep_request(
        "pinn-mlp", shapes="8", device="cpu", precisions="bf16", modes="compile", compile_mode="reduce-overhead"
    )


@pytest.mark.parametrize("setting", ["channels_last", "cudnn_benchmark", "trust_pickle"])
@pytest.mark.parametrize("value", ["no", 1, None])
def test_a_boolean_setting_that_is_not_a_bool_is_named(setting, value):
    with pytest.raises(UsageError) as bad:
        sweep_request("pinn-mlp", shapes="8", device="cpu", **{setting: value})
    assert bad.value.parameter == setting and str(bad.value).startswith(f"{setting} {value!r}: must be True or False")


@pytest.mark.parametrize(
    ("keywords", "needle"),
    [({"shape": [8]}, "unknown setting 'shape' (did you mean shapes?)"), ({"bogus": 1}, "known: shapes, batches")],
)
def test_an_unknown_keyword_of_a_library_call_is_a_usage_error_naming_it(keywords, needle):
    import surrobench

    for call in (surrobench.benchmark, surrobench.optimize):
        with pytest.raises(UsageError) as err:
            call("pinn-mlp", device="cpu", **keywords)
        assert needle in str(err.value)


def test_an_unknown_keyword_is_matched_against_the_call_s_own_keywords_too():
    import surrobench

    with pytest.raises(UsageError, match=r"unknown setting 'verfy' \(did you mean verify\?\)"):
        surrobench.optimize("pinn-mlp", device="cpu", verfy=2)
    with pytest.raises(UsageError, match=r"unknown setting 'budget' \(did you mean budget_s\?\)"):
        surrobench.optimize("pinn-mlp", device="cpu", budget=5)
    with pytest.raises(UsageError) as err:  # nothing close: the list names the call's own keywords as well
        surrobench.benchmark("pinn-mlp", device="cpu", where_to_store="x.db")
    assert ", db" in str(err.value) and "sweep" not in str(err.value)
