"""The accuracy guard: a remedy whose output overflows or loses precision is rejected, never accepted."""

from __future__ import annotations

import torch
from torch import nn

from surrobench.analysis.accuracy import DEFAULT_TOLERANCE, check_accuracy


class Offset(nn.Module):
    """A linear map onto values near 1000, then the offset removed: exact in fp32, but bf16 keeps 8 bits of
    mantissa, so near 1000 it rounds to multiples of 4 and the small field drowns."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        with torch.no_grad():
            self.lin.weight.copy_(torch.eye(4))
            self.lin.bias.fill_(1000.0)

    def forward(self, x):
        return self.lin(x) - 1000.0


class Amplify(nn.Module):
    """Values around 1e5 after a linear layer: beyond fp16's largest finite value, 65504."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        with torch.no_grad():
            self.lin.weight.copy_(torch.eye(4) * 1e5)
            self.lin.bias.zero_()

    def forward(self, x):
        return self.lin(x) * 1e-5


def _outputs(model, x, dtype=None):
    with torch.inference_mode():
        if dtype is None:
            return model(x), model.double()(x.double())
        with torch.autocast("cpu", dtype=dtype):
            return model(x)


def test_bf16_precision_loss_is_rejected_by_both_rules():
    model, x = Offset(), torch.randn(64, 4, generator=torch.Generator().manual_seed(0))
    ref, fp64 = _outputs(model, x)
    model.float()
    cand = _outputs(model, x, torch.bfloat16)
    verdict = check_accuracy(cand, ref, fp64)
    assert not verdict.ok and verdict.decided_by == "rel_l2"
    assert verdict.rel_l2 > 0.1 and verdict.fp64_rmse > 10 * verdict.ref_fp64_rmse
    assert "torch._dynamo" in verdict.reason  # the bound it exceeds; decided_by and rel_l2 above


def test_fp16_overflow_is_rejected_as_nonfinite():
    model, x = Amplify(), torch.randn(64, 4, generator=torch.Generator().manual_seed(1))
    ref, fp64 = _outputs(model, x)
    model.float()
    cand = _outputs(model, x, torch.float16)
    assert not torch.isfinite(cand).all()  # the planted overflow happened
    verdict = check_accuracy(cand, ref, fp64)
    assert not verdict.ok and verdict.decided_by == "nonfinite"
    assert "NaN or Inf" in verdict.reason


def test_small_error_is_accepted_by_the_rel_l2_rule():
    ref = torch.randn(2, 3, 8, 8, generator=torch.Generator().manual_seed(2))
    verdict = check_accuracy(ref * (1 + 1e-4), ref)
    assert verdict.ok and verdict.decided_by == "rel_l2" and verdict.rel_l2 < DEFAULT_TOLERANCE
    assert len(verdict.outputs[0].rel_l2_channels) == 3


def test_a_small_channel_cannot_hide_behind_a_large_one():
    ref = torch.ones(1, 2, 4, 4)
    ref[:, 1] = 1e-3
    cand = ref.clone()
    cand[:, 1] *= 1.5  # 50% off in the small channel; the whole output moves by 1e-3 relative
    verdict = check_accuracy(cand, ref)
    assert verdict.outputs[0].rel_l2 < DEFAULT_TOLERANCE
    assert not verdict.ok and verdict.rel_l2 > 0.4


def test_fp64_rule_accepts_a_candidate_no_worse_than_fp32_itself():
    exact = torch.randn(4096, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    noise = torch.randn(4096, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    ref = (exact + 0.05 * noise).float()  # an ill-conditioned model: fp32 is itself 5% off
    cand = (exact - 0.05 * noise).float()  # as far from the truth, on the other side: 10% from fp32
    verdict = check_accuracy(cand, ref, exact)
    assert verdict.rel_l2 > DEFAULT_TOLERANCE
    assert verdict.ok and verdict.decided_by == "fp64"
    assert check_accuracy(cand, ref).ok is False  # without fp64 the rel L2 rule alone rejects


def test_fp64_rule_slack_scales_with_small_outputs():
    # a bf16-like candidate of a model with small outputs (~1e-2): 3% off in rel L2 while fp32 is exact;
    # an absolute slack of tolerance / 10 = 1e-3 would cover that error, a slack relative to the scale does not
    exact = 1e-2 * torch.randn(4096, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    noise = torch.randn(4096, dtype=torch.float64, generator=torch.Generator().manual_seed(6))
    ref, cand = exact.float(), (exact + 3e-4 * noise).float()
    verdict = check_accuracy(cand, ref, exact)
    assert verdict.rel_l2 > DEFAULT_TOLERANCE and verdict.fp64_rmse < 1e-3
    assert not verdict.ok and verdict.decided_by == "rel_l2"


def test_outputs_of_another_shape_are_rejected():
    verdict = check_accuracy((torch.zeros(2, 3),), (torch.zeros(3, 2),))
    assert not verdict.ok and verdict.decided_by == "shape"


def test_channels_of_point_outputs_are_the_small_dimension():
    from surrobench.analysis.accuracy import channel_dim

    assert channel_dim((1, 262144, 2)) == 2  # a PINN's (B, N, 2): two output fields over N points
    assert channel_dim((1, 3, 4096)) == 1 and channel_dim((1, 3, 64, 64)) == 1 and channel_dim((64, 4)) is None
    ref = torch.ones(1, 1000, 2)
    ref[..., 1] = 1e-3
    cand = ref.clone()
    cand[..., 1] *= 1.5
    verdict = check_accuracy(cand, ref)
    assert len(verdict.outputs[0].rel_l2_channels) == 2 and not verdict.ok and verdict.rel_l2 > 0.4


def test_the_tensors_of_a_dataclass_output_are_compared():
    """A model returning a dataclass: its fields' tensors are judged, and a copy keeps them when the step's
    buffers are overwritten (a CUDA graph's static output)."""
    from dataclasses import dataclass

    from surrobench.execution.interleave import clone_output

    @dataclass
    class Fields:
        u: torch.Tensor
        label: str = "u"

    ref = Fields(torch.linspace(1.0, 2.0, 64).reshape(1, 1, 8, 8))
    assert not check_accuracy(Fields(ref.u * 1.5), ref).ok
    assert check_accuracy(Fields(ref.u.clone()), ref).ok
    kept = clone_output(ref)
    ref.u.zero_()
    assert isinstance(kept, Fields) and kept.label == "u" and float(kept.u.sum()) > 0
