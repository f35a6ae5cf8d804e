"""check_input_size: sizes inputs on the meta device; inputs that need data are not refused."""

import pytest
import torch

from surrobench.errors import UsageError
from surrobench.execution.sweep import check_input_size
from surrobench.workload.spec import parse_shapes


class _HostCopyInputs:
    """A surrogate whose inputs are copied to host memory, as the pageable-h2d scenario's are."""

    def __init__(self, numel: int):
        self.numel = numel

    def example_inputs(self, batch, shape, *, generator, device):
        return (torch.empty(batch, self.numel, device=device).cpu(),)


class _PlainInputs(_HostCopyInputs):
    def example_inputs(self, batch, shape, *, generator, device):
        return (torch.empty(batch, self.numel, device=device),)


def test_inputs_that_need_data_are_not_refused():
    shape = parse_shapes("8")[0]
    # on meta the host copy raises NotImplementedError: no size check, the real run decides
    assert check_input_size("m", _HostCopyInputs(16), shape, 1, 3, free=1 << 30) is None


def test_inputs_over_the_free_memory_are_refused():
    shape = parse_shapes("8")[0]
    with pytest.raises(UsageError, match="available"):
        check_input_size("m", _PlainInputs(1 << 20), shape, 1, 3, free=1 << 20)
