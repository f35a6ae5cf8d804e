"""The op probe: FFT sizes and dtypes, host synchronizations, seen on one forward."""

from __future__ import annotations

import torch

from surrobench.collect.probe import FftCall, probe_call


def test_probe_records_fft_sizes_and_host_syncs():
    x = torch.randn(2, 3, 12, 16)

    def forward():
        spec = torch.fft.rfft2(x)
        y = torch.fft.irfft2(spec, s=(12, 16))
        if y.abs().max().item() > 0:  # a host sync
            y = y[torch.nonzero(y > 0, as_tuple=True)]
        return y

    with torch.inference_mode():
        facts, error = probe_call(forward)
    assert error is None
    assert [c.sizes for c in facts.ffts] == [(12, 16), (12, 16)]
    assert not facts.ffts[0].power_of_two
    assert facts.syncs["item"] == 1 and facts.syncs["nonzero_numpy"] == 1
    assert facts.complex_ops > 0 and "12x16" in facts.fft_text()


def test_probe_stops_at_a_half_precision_fft():
    x = torch.randn(2, 8, 8)
    with torch.inference_mode():
        facts, error = probe_call(lambda: torch.fft.rfft2(x.to(torch.bfloat16)), stop_at_half_fft=True)
    assert error is None  # stopped before the FFT library could refuse it
    assert facts.ffts == [FftCall("fft_rfft2", "bfloat16", (8, 8))]


def test_probe_returns_the_models_own_exception():
    def forward():
        raise ValueError("broken")

    facts, error = probe_call(forward)
    assert isinstance(error, ValueError)
    assert FftCall("x", "float16", (64, 32)).power_of_two


def test_boolean_mask_indexing_is_a_host_sync():
    y = torch.randn(4, 4)
    with torch.inference_mode():
        facts, _ = probe_call(lambda: y[y > 0])
    assert facts.syncs["boolean-mask indexing"] == 1


def test_probe_counts_convolutions_of_every_kind():
    x = torch.randn(1, 2, 8, 8)
    conv, up = torch.nn.Conv2d(2, 2, 3), torch.nn.ConvTranspose2d(2, 2, 2)
    with torch.inference_mode():
        facts, _ = probe_call(lambda: up(conv(x)) + torch.nn.functional.conv1d(x[0], torch.randn(2, 8, 3)).sum())
        plain, _ = probe_call(lambda: torch.nn.functional.linear(x, torch.randn(4, 8)))
    assert facts.convolutions == 3 and plain.convolutions == 0
