"""2-D incompressible Navier–Stokes in vorticity form on the periodic unit square, a ``surrobench versus`` problem.

The setting of the FNO paper's data (Li et al., "Fourier Neural Operator for Parametric Partial Differential
Equations", ICLR 2021, section 5.3 and its ``ns_2d.py`` data generator)::

    dw/dt + u . grad(w) = nu * lap(w) + f,   u = (d psi/dy, -d psi/dx),   -lap(psi) = w,
    nu = 1e-3,   f(x, y) = 0.1 * (sin(2 pi (x + y)) + cos(2 pi (x + y))),
    w0 ~ GRF: N(0, 7^(3/2) (-lap + 49 I)^(-2.5)), mean zero.

The solver is pseudo-spectral in torch (CPU or GPU): Crank–Nicolson for the diffusion and Heun's method (RK2) for
advection and forcing (second order in time, :func:`step`), the nonlinear term dealiased by the 2/3 rule (Orszag
1971). Its ladder (``levels``) is grid resolution x time step; each level solves on its own grid and maps the
result to the evaluation grid by Fourier truncation or zero-padding (that cost is counted as the solver's). The
reference is the solver at twice the evaluation resolution and half the smallest time step of the ladder.

``surrobench versus --problem examples/navier_stokes.py:problem --problem-arg weights=ns_fno.pt`` compares it
with the FNO trained by ``examples/train_ns_fno.py`` (weights are retrained by that script, not stored here).
The surrogate maps the vorticity at ``t`` to the vorticity at ``t + horizon`` (input ``(B, 3, N, N)``: the vorticity
and the two grid coordinates, as the zoo's ``fno2d``); ``steps`` > 1 makes it a rollout.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import torch

from surrobench.workload.zoo.fno import FNO2d

VISCOSITY = 1e-3
#: The surrogate's width and modes: the zoo's ``fno2d`` with one input field and the grid (3 channels in).
FNO_WIDTH, FNO_MODES = 32, 12


def wavenumbers(n: int, device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """Angular wavenumbers ``(ky, kx)`` of an ``n x n`` rfft2 grid on the unit square: ``(n, 1)`` and ``(1, n//2+1)``."""
    ky = 2 * math.pi * torch.fft.fftfreq(n, 1 / n, device=device, dtype=torch.float64)[:, None]
    kx = 2 * math.pi * torch.fft.rfftfreq(n, 1 / n, device=device, dtype=torch.float64)[None, :]
    return ky, kx


def forcing(n: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """``f = 0.1 (sin 2 pi (x + y) + cos 2 pi (x + y))`` on the ``n x n`` grid, ``(n, n)`` fp64."""
    x = torch.arange(n, device=device, dtype=torch.float64) / n
    s = 2 * math.pi * (x[:, None] + x[None, :])
    return 0.1 * (torch.sin(s) + torch.cos(s))


def resample(w: torch.Tensor, n: int) -> torch.Tensor:
    """``w`` ``(..., m, m)`` on the ``n x n`` grid by Fourier truncation (n < m) or zero-padding (n > m)."""
    m = w.shape[-1]
    if m == n:
        return w
    w_hat = torch.fft.rfft2(w)
    out = torch.zeros((*w.shape[:-2], n, n // 2 + 1), dtype=w_hat.dtype, device=w.device)
    k = min(m, n) // 2
    out[..., :k, :k] = w_hat[..., :k, :k]
    out[..., -k:, :k] = w_hat[..., -k:, :k]
    return torch.fft.irfft2(out, s=(n, n)) * (n * n) / (m * m)


class Spectral:
    """The operators of one ``n x n`` grid: Laplacian symbol, the 2/3-rule mask, the forcing's transform."""

    def __init__(self, n: int, device: torch.device | str) -> None:
        self.n = n
        self.ky, self.kx = wavenumbers(n, device)
        self.lap = -(self.ky**2 + self.kx**2)
        kmax = 2 * math.pi * n / 3  # 2/3 rule: keep |k| < (2/3) * (n / 2) per direction
        self.dealias = ((self.ky.abs() < kmax) & (self.kx.abs() < kmax)).to(torch.float64)
        self.f_hat = torch.fft.rfft2(forcing(n, device))
        self.inv_lap = -1.0 / torch.where(self.lap == 0, torch.ones_like(self.lap), self.lap)
        self.inv_lap[0, 0] = 0.0  # psi has mean zero

    def rhs(self, w_hat: torch.Tensor, with_forcing: bool = True) -> torch.Tensor:
        """``-u . grad(w) + f`` in Fourier space (the explicit part), ``(..., n, n//2+1)``."""
        psi_hat = w_hat * self.inv_lap  # -lap(psi) = w
        n = (self.n, self.n)
        u = torch.fft.irfft2(1j * self.ky * psi_hat, s=n)
        v = torch.fft.irfft2(-1j * self.kx * psi_hat, s=n)
        wx = torch.fft.irfft2(1j * self.kx * w_hat, s=n)
        wy = torch.fft.irfft2(1j * self.ky * w_hat, s=n)
        out = -torch.fft.rfft2(u * wx + v * wy) * self.dealias
        return out + self.f_hat if with_forcing else out


@functools.lru_cache(maxsize=16)
def spectral(n: int, device: torch.device) -> Spectral:
    """The grid's operators, built once per grid and device (not in every solve's time)."""
    return Spectral(n, device)


def step(op: Spectral, w_hat: torch.Tensor, dt: float, nu: float, with_forcing: bool = True) -> torch.Tensor:
    """One IMEX step: Heun (RK2) for ``N = -u.grad(w) + f``, Crank–Nicolson for ``nu lap(w)``::

        w* = ((1 + dt/2 nu L) w + dt N(w)) / (1 - dt/2 nu L)
        w' = ((1 + dt/2 nu L) w + dt/2 (N(w) + N(w*))) / (1 - dt/2 nu L)

    second order in ``dt`` (both halves are).
    """
    a, b = 1 + 0.5 * dt * nu * op.lap, 1 - 0.5 * dt * nu * op.lap
    n0 = op.rhs(w_hat, with_forcing)
    w_star = (a * w_hat + dt * n0) / b
    return (a * w_hat + 0.5 * dt * (n0 + op.rhs(w_star, with_forcing))) / b


def simulate(
    w0: torch.Tensor,
    n: int,
    dt: float,
    t_end: float,
    *,
    frames: int = 1,
    nu: float = VISCOSITY,
    with_forcing: bool = True,
) -> torch.Tensor:
    """Vorticity at ``t_end * k / frames``, ``k = 1..frames``, from ``w0`` ``(..., m, m)``, solved on the ``n x n`` grid
    with time step ``dt`` (rounded so that each frame is a whole number of steps) and returned on ``w0``'s grid:
    ``(..., frames, m, m)`` fp64."""
    m = w0.shape[-1]
    op = spectral(n, w0.device)
    w_hat = torch.fft.rfft2(resample(w0.to(torch.float64), n))
    per_frame = max(1, round(t_end / frames / dt))
    dt = t_end / frames / per_frame
    out = []
    for _ in range(frames):
        for _ in range(per_frame):
            w_hat = step(op, w_hat, dt, nu, with_forcing)
        out.append(resample(torch.fft.irfft2(w_hat, s=(n, n)), m))
    return torch.stack(out, dim=-3)


def grf(n_cases: int, size: int, seed: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """Initial vorticities ``(n_cases, size, size)`` fp64 from the FNO paper's Gaussian random field (alpha 2.5,
    tau 7: ``random_fields.py`` of its code), mean zero."""
    gen = torch.Generator().manual_seed(seed)
    alpha, tau = 2.5, 7.0
    sigma = tau ** (0.5 * (2 * alpha - 2))
    k = torch.fft.fftfreq(size, 1 / size, dtype=torch.float64)
    k2 = k[:, None] ** 2 + k[None, :] ** 2
    sqrt_eig = size**2 * math.sqrt(2.0) * sigma * (4 * math.pi**2 * k2 + tau**2) ** (-alpha / 2)
    sqrt_eig[0, 0] = 0.0
    noise = torch.randn(n_cases, size, size, 2, generator=gen, dtype=torch.float64)
    coeff = sqrt_eig * torch.view_as_complex(noise)
    return torch.fft.ifft2(coeff).real.to(device)


def grid_inputs(w: torch.Tensor) -> torch.Tensor:
    """The surrogate's input ``(B, 3, N, N)`` fp32 from vorticities ``(B, N, N)``: the field and the x, y grid."""
    b, n = w.shape[0], w.shape[-1]
    x = torch.arange(n, device=w.device, dtype=torch.float32) / n
    gx = x[:, None].expand(n, n)
    gy = x[None, :].expand(n, n)
    return torch.stack([w.float(), gx.expand(b, n, n), gy.expand(b, n, n)], dim=1)


def build_fno() -> torch.nn.Module:
    """The zoo's FNO architecture (:class:`surrobench.workload.zoo.fno.FNO2d`) for this problem, untrained."""
    return FNO2d(in_channels=3, out_channels=1, width=FNO_WIDTH, modes=FNO_MODES)


class NavierStokes:
    """The ``versus`` problem (docs/versus.md, "The problem"): ladder, cases, reference, surrogate.

    Args:
        size: the evaluation grid (cases, reference and surrogate are compared on ``size x size``).
        horizon: time between the surrogate's input and output (the FNO paper maps 10 time units in steps of 1).
        steps: rollout length (1: one map ``w(0) -> w(horizon)``).
        resolutions, dts: the ladder (every pair), coarse to fine.
        weights: a ``state_dict`` file of :func:`build_fno` (``train_ns_fno.py``); None: untrained.
    """

    def __init__(
        self,
        size: int = 64,
        horizon: float = 1.0,
        steps: int = 1,
        resolutions: tuple[int, ...] | None = None,
        dts: tuple[float, ...] = (0.1, 0.05, 0.02, 0.01),
        weights: str | None = None,
    ) -> None:
        self.size, self.horizon, self.steps = size, horizon, steps
        self.resolutions = resolutions or (size // 4, size // 2, size)
        self.dts = dts
        self.levels = [f"n{n}_dt{dt:g}" for n in self.resolutions for dt in self.dts]
        self._ladder = {f"n{n}_dt{dt:g}": (n, dt) for n in self.resolutions for dt in self.dts}
        self.weights = weights
        self.trained = weights is not None
        self.batched = True  # solve takes a stack of cases (B, size, size) as well: simulate is batched
        self.name = f"navier_stokes_{size}"

    def cases(self, n: int, seed: int, device: str) -> list[torch.Tensor]:
        """``n`` initial vorticities ``(size, size)`` on ``device``."""
        return list(grf(n, self.size, seed, device))

    def solve(self, case: torch.Tensor, level: str) -> torch.Tensor:
        """The vorticity at ``horizon * k``, ``k = 1..steps``: ``(steps, size, size)``; for a stack of cases
        ``(B, size, size)``, ``(B, steps, size, size)``."""
        n, dt = self._ladder[level]
        return simulate(case, n, dt, self.horizon * self.steps, frames=self.steps)

    def reference(self, case: torch.Tensor) -> torch.Tensor:
        """The solver at twice the finest resolution and half the smallest step."""
        n = 2 * max(self.resolutions)
        return simulate(case, n, min(self.dts) / 2, self.horizon * self.steps, frames=self.steps)

    def inputs(self, case: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (grid_inputs(case[None]),)

    def field(self, output: torch.Tensor) -> torch.Tensor:
        return output[0, 0]

    def advance(self, inputs: tuple[torch.Tensor, ...], output: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """The next rollout step's inputs: the output vorticity with the same grid channels."""
        x = inputs[0].clone()
        x[:, 0] = output[:, 0]
        return (x,)

    def surrogate(self) -> torch.nn.Module:
        """:func:`build_fno` with ``weights`` loaded when given."""
        model = build_fno()
        if self.weights is not None:
            model.load_state_dict(torch.load(Path(self.weights), map_location="cpu", weights_only=True))
        return model


def problem(**kwargs) -> NavierStokes:
    """The factory ``--problem examples/navier_stokes.py:problem`` names (keywords: :class:`NavierStokes`)."""
    return NavierStokes(**kwargs)
