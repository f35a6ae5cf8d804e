import pytest

from surrobench.errors import UsageError
from surrobench.workload.spec import ShapeSpec, parse_batches, parse_modes, parse_precisions, parse_shapes


def test_bare_and_full_shapes():
    assert parse_shapes("128, 256") == [ShapeSpec(size=128), ShapeSpec(size=256)]
    assert parse_shapes("1x3x128x128,2X3X64X64") == [ShapeSpec(full=(1, 3, 128, 128)), ShapeSpec(full=(2, 3, 64, 64))]
    assert parse_shapes("1x3x128x128")[0].label() == "1x3x128x128"


@pytest.mark.parametrize(
    "text", [str(10**23), f"1x3x{2**63}x4", "", "128,", "abc", "0", "-4", "1x3xx4", "1x0x4x4", "12.5", "7"[:0] + "x"]
)
def test_malformed_shapes(text):
    with pytest.raises(UsageError):
        parse_shapes(text)


@pytest.mark.parametrize(
    "parse, text, twice",
    [(parse_shapes, "64,64", "64"), (parse_shapes, "1x3x8x8, 1X3X8X8", "1x3x8x8"), (parse_batches, "1,2,01", "1")],
)
def test_a_list_with_an_entry_given_twice_is_refused(parse, text, twice):
    with pytest.raises(UsageError) as raised:
        parse(text)
    assert raised.value.parameter == ("shapes" if parse is parse_shapes else "batches")
    assert f"{text!r}: {twice} " in raised.value.detail  # the entry given twice, named


def test_batches():
    assert parse_batches("1,2,4,8") == [1, 2, 4, 8]
    for bad in [str(2**63), "", "0", "1,,2", "one", "-1"]:
        with pytest.raises(UsageError):
            parse_batches(bad)


def test_precisions_and_modes():
    assert parse_precisions("FP32,bf16,fp32") == ["fp32", "bf16"]
    assert parse_modes("eager,cudagraph") == ["eager", "cudagraph"]
    with pytest.raises(UsageError, match="fp8"):
        parse_precisions("fp8")
    with pytest.raises(UsageError):
        parse_modes("jit")


def test_shape_spec_needs_exactly_one_form():
    with pytest.raises(ValueError):
        ShapeSpec()
    with pytest.raises(ValueError):
        ShapeSpec(size=4, full=(1, 4))


def test_an_empty_dimension_is_named_as_one():
    for text in ("x", "4x", "1x3xx4"):
        with pytest.raises(UsageError) as raised:
            parse_shapes(text)
        assert "dimension is empty" in str(raised.value) and "''" not in str(raised.value)
