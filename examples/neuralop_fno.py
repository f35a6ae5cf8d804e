"""Models surrobench did not write: neuraloperator's FNO and TFNO, loaded through ``--model file.py:factory``.

    surrobench run --model examples/neuralop_fno.py:build_fno --shape 256,512 --batch 1,8
    surrobench diagnose --model examples/neuralop_fno.py:build_tfno --shape 512 --batch 8

Needs ``pip install neuraloperator`` (2.0; it brings tensorly and tensorly-torch). The input is the default
layout of a factory model, ``(B, 3, N, N)``: three input fields on an N x N grid; the output is one field.
"""

import torch
from neuralop.models import FNO, TFNO

IN_CHANNELS = 3
OUT_CHANNELS = 1
MODES = (16, 16)
WIDTH = 64
LAYERS = 4


def build_fno() -> torch.nn.Module:
    """neuraloperator's FNO (Li et al., "Fourier Neural Operator for Parametric PDEs", ICLR 2021): 4 spectral
    layers of width 64 keeping 16 x 16 modes, a grid positional embedding, channel MLPs; dense spectral weights."""
    return FNO(
        n_modes=MODES, in_channels=IN_CHANNELS, out_channels=OUT_CHANNELS, hidden_channels=WIDTH, n_layers=LAYERS
    )


def build_tfno() -> torch.nn.Module:
    """neuraloperator's TFNO (Kossaifi et al., "Multi-Grid Tensorized Fourier Neural Operator", TMLR 2024): the
    same FNO with its spectral weights in a Tucker factorization at 5% of the parameters, contracted factor by
    factor at run time (``implementation="factorized"``)."""
    return TFNO(
        n_modes=MODES,
        in_channels=IN_CHANNELS,
        out_channels=OUT_CHANNELS,
        hidden_channels=WIDTH,
        n_layers=LAYERS,
        factorization="tucker",
        implementation="factorized",
        rank=0.05,
    )
