"""Train the zoo-style FNO on the Navier–Stokes solver's data (``examples/navier_stokes.py``), within a time budget.

Data: ``--cases`` Gaussian-random-field initial vorticities, solved with the reference settings of
``navier_stokes.NavierStokes`` (twice the grid, half the ladder's smallest time step) for ``--frames`` frames
``--horizon`` apart; every pair of consecutive frames ``(w(t), w(t + horizon))`` is a training sample, so the model
can also be rolled out. Loss: the relative L2 error (the FNO paper's). Adam, learning rate cosine-annealed over
the budget's epochs as estimated after the first.

Weights are not stored in the repository: this script retrains them (about 2-3 minutes at 64² on an H200, seconds
at 16² on a CPU for a smoke test) and writes the ``state_dict`` to ``--out``::

    python examples/train_ns_fno.py --size 64 --budget-s 150 --out ns_fno_64.pt
    surrobench versus --problem examples/navier_stokes.py:problem --problem-arg weights=ns_fno_64.pt
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import navier_stokes as ns  # noqa: E402


def make_data(size: int, cases: int, frames: int, horizon: float, seed: int, device: str, chunk: int = 256):
    """Pairs ``(x, y)``: inputs ``(P, 3, size, size)`` and targets ``(P, 1, size, size)`` fp32 on ``device``."""
    problem = ns.NavierStokes(size=size, horizon=horizon)
    xs, ys = [], []
    for start in range(0, cases, chunk):
        w0 = ns.grf(min(chunk, cases - start), size, seed + start, device)
        traj = ns.simulate(w0, 2 * max(problem.resolutions), min(problem.dts) / 2, horizon * frames, frames=frames)
        traj = torch.cat([w0[:, None], traj], dim=1)  # (b, frames + 1, size, size)
        xs.append(traj[:, :-1].reshape(-1, size, size))
        ys.append(traj[:, 1:].reshape(-1, size, size))
    x, y = torch.cat(xs), torch.cat(ys)
    return ns.grid_inputs(x), y[:, None].float()


def relative_l2(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    diff = (pred - target).flatten(1).norm(dim=1)
    return (diff / target.flatten(1).norm(dim=1)).mean()


def train(args) -> dict:
    device = args.device
    torch.manual_seed(args.seed)
    t0 = time.perf_counter()
    x, y = make_data(args.size, args.cases, args.frames, args.horizon, args.seed + 10_000, device)
    n_val = max(1, len(x) // 10)
    x_val, y_val, x, y = x[:n_val], y[:n_val], x[n_val:], y[n_val:]
    data_s = time.perf_counter() - t0
    model = ns.build_fno().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    budget = args.budget_s - data_s
    start, epoch, epochs = time.perf_counter(), 0, None
    while time.perf_counter() - start < budget:
        perm = torch.randperm(len(x), device=device)
        for j in range(0, len(x), args.batch):
            idx = perm[j : j + args.batch]
            loss = relative_l2(model(x[idx]), y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        epoch += 1
        if epochs is None:  # the cosine schedule's length, from the first epoch's time
            epochs = max(1, int(budget / max(time.perf_counter() - start, 1e-6)))
        for group in opt.param_groups:
            group["lr"] = 0.5 * args.lr * (1 + math.cos(math.pi * min(epoch / epochs, 1.0)))
    model.eval()
    with torch.no_grad():
        val = float(relative_l2(model(x_val), y_val))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), args.out)
    return {
        "size": args.size,
        "pairs": len(x),
        "epochs": epoch,
        "data_s": round(data_s, 1),
        "train_s": round(time.perf_counter() - start, 1),
        "val_relative_l2": val,
        "out": str(args.out),
    }


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--cases", type=int, default=512, help="initial conditions (each gives --frames pairs)")
    p.add_argument("--frames", type=int, default=4)
    p.add_argument("--horizon", type=float, default=1.0)
    p.add_argument("--budget-s", type=float, default=150.0, help="data generation and training, seconds")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--out", default="ns_fno.pt")
    summary = train(p.parse_args(argv))
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()
