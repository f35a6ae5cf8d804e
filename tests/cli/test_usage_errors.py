"""The library names its parameters in its errors; the command line names its flags in their place."""

from __future__ import annotations

import pytest
from conftest import run_cli

from surrobench.cli.options import flag_for, usage_line
from surrobench.errors import EXIT_USAGE, UsageError


def test_a_bad_parameter_keeps_its_name_and_the_cli_gives_its_flag():
    error = UsageError.bad("budget_s", "'10': a number, not str")
    assert str(error) == "budget_s '10': a number, not str" and error.parameter == "budget_s"
    assert usage_line(error) == "--budget-s '10': a number, not str"
    assert usage_line(UsageError.bad("shapes", ": give at least one shape")) == "--shape: give at least one shape"
    assert usage_line(UsageError("no run 'x' in r.db")) == "no run 'x' in r.db"  # not a parameter's: as it is


@pytest.mark.parametrize(
    "parameter, flag",
    [
        ("budget_s", "--budget-s"),
        ("input_sets", "--input-sets"),
        ("batches", "--batch"),
        ("ignore_fields", "--ignore-field"),
    ],
)
def test_every_parameter_maps_to_its_flag(parameter, flag):
    assert flag_for(parameter) == flag


def test_the_library_call_names_the_parameter():
    import surrobench

    with pytest.raises(UsageError) as info:
        surrobench.optimize("pinn-mlp", shapes=[8], device="cpu", budget_s="10")
    assert info.value.parameter == "budget_s" and "--" not in str(info.value)


def test_the_command_names_the_flag(capsys, tmp_path):
    code = run_cli(
        [
            "optimize",
            "--model",
            "pinn-mlp",
            "--shape",
            "8",
            "--device",
            "cpu",
            "--budget-s",
            "0",
            "--db",
            str(tmp_path / "r.db"),
        ]
    )
    assert code == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("surrobench: error: --budget-s 0.0: ") and err.count("\n") == 1


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "--model", "fno2d", "--shape", "16", "--device", "cpu", "--rate", "-3"],
        ["diagnose", "--model", "fno2d", "--shape", "16", "--device", "cpu", "--iters", "12", "--measure-s", "-1"],
    ],
    ids=["serve", "diagnose"],
)
def test_an_error_after_the_progress_started_is_still_one_line(argv, capsys, tmp_path):
    # off a terminal the progress bar is not started: a stopped bar left an empty line before the error
    assert run_cli([*argv, "--db", str(tmp_path / "r.db")]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.splitlines() == [line for line in err.splitlines() if line.strip()]
    assert err.splitlines()[-1].startswith("surrobench: error: ")


@pytest.mark.parametrize("flag, given", [("--shape", "64,64"), ("--batch", "1,2,1")])
def test_a_size_given_twice_in_a_list_is_refused_saying_what_a_comma_separates(capsys, tmp_path, flag, given):
    code = run_cli(["optimize", "--model", "pinn-mlp", flag, given, "--device", "cpu", "--db", str(tmp_path / "r.db")])
    assert code == EXIT_USAGE and not (tmp_path / "r.db").exists()
    err = capsys.readouterr().err
    assert err.startswith(f"surrobench: error: {flag} '{given}': ") and err.count("\n") == 1
    assert ("1x3x64x64" in err) == (flag == "--shape")  # how a full shape is written, where a shape was repeated


def test_the_library_reads_a_list_of_shapes_as_one_ladder():
    import surrobench

    with pytest.raises(UsageError) as info:
        surrobench.optimize("pinn-mlp", shapes=[8, (8,)], device="cpu")
    assert info.value.parameter == "shapes"
