"""Training, evaluation and the symmetry check for the conformer-ensemble networks.

`pick` decides which conformers a model sees: all of them (the ensemble model), or one per molecule
(the single-conformer baseline: a fresh random one every training step, a fixed random one at test,
since at inference one does not know which conformer dominates the ensemble; or, as an oracle that
needs the energies, the lowest-energy one). Targets are standardised on the training set.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from training.methods.spice.conformers import Ensembles
from training.methods.spice.model import Spice

Z_BETA = 1e-3


def pick_conformers(data: Ensembles, mode: str, gen: torch.Generator) -> torch.Tensor:
    """Positions [K,M',N,3]: all conformers ("all"), one at random ("random") or the lowest-energy one ("lowest")."""
    if mode == "all":
        return data.pos
    if mode == "random":
        idx = torch.randint(data.pos.shape[1], (len(data),), generator=gen)
    elif mode == "lowest":
        idx = data.energy.argmin(1)
    else:
        raise ValueError(f"unknown conformer mode {mode!r}")
    return data.pos[torch.arange(len(data)), idx].unsqueeze(1)


def fit(model: Spice, train: Ensembles, mode: str, epochs: int, seed: int, batch: int = 32, lr: float = 2e-3,
        upcycle_at: int | None = None, progress: Callable | None = None) -> list[float]:
    """AdamW on MSE of standardised targets + Z_BETA * router z-loss; returns the mean loss per epoch."""
    gen = torch.Generator().manual_seed(seed)
    mean, std = train.target.mean(), train.target.std()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-3)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=epochs * -(-len(train) // batch))
    upcycle_at = epochs // 3 if upcycle_at is None else upcycle_at
    losses = []
    epochs_iter = progress(range(epochs), desc=f"train {mode}", total=epochs) if progress else range(epochs)
    for epoch in epochs_iter:
        if epoch == upcycle_at:
            model.upcycle()
        model.train()
        pos = pick_conformers(train, mode, gen)
        order = torch.randperm(len(train), generator=gen)
        total = 0.0
        for s in range(0, len(train), batch):
            i = order[s:s + batch]
            pred, z = model(pos[i], train.features[i], train.adj[i], train.mask[i])
            loss = ((pred - (train.target[i] - mean) / std) ** 2).mean() + Z_BETA * z.mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += float(loss.detach()) * len(i)
        losses.append(total / len(train))
    model.target_mean, model.target_std = mean, std
    return losses


@torch.no_grad()
def predict(model: Spice, data: Ensembles, mode: str, seed: int, batch: int = 128) -> torch.Tensor:
    """Predictions in target units (a fixed random conformer per molecule for mode "random")."""
    model.eval()
    pos = pick_conformers(data, mode, torch.Generator().manual_seed(seed + 7919))
    out = [model(pos[s:s + batch], data.features[s:s + batch], data.adj[s:s + batch], data.mask[s:s + batch])[0]
           for s in range(0, len(data), batch)]
    return torch.cat(out) * model.target_std + model.target_mean


def random_orthogonal(shape: tuple[int, ...], gen: torch.Generator, dtype=torch.float64) -> torch.Tensor:
    """Haar-random O(3) matrices (rotations and reflections), [*shape, 3, 3]."""
    q, r = torch.linalg.qr(torch.randn(*shape, 3, 3, generator=gen, dtype=torch.float64))
    return (q * torch.sign(torch.diagonal(r, dim1=-2, dim2=-1)).unsqueeze(-2)).to(dtype)


@torch.no_grad()
def symmetry_error(model: Spice, data: Ensembles, seed: int) -> dict[str, float]:
    """Relative change of the prediction, and of the vector features after undoing the rotations,
    when every conformer gets its own random O(3) transform and translation and the conformers are shuffled."""
    model.eval()
    gen = torch.Generator().manual_seed(seed)
    dtype = next(model.parameters()).dtype
    pos, feats = data.pos.to(dtype), data.features.to(dtype)
    k, m = pos.shape[:2]
    rot = random_orthogonal((k, m), gen, pos.dtype)
    shift = 10.0 * torch.randn(k, m, 1, 3, generator=gen, dtype=torch.float64).to(pos.dtype)
    perm = torch.randperm(m, generator=gen)
    moved = (pos @ rot.transpose(-1, -2) + shift)[:, perm]
    adj = data.adj.to(dtype)
    x0, v0, _ = model.encode(pos, feats, adj, data.mask)
    x1, v1, _ = model.encode(moved, feats, adj, data.mask)
    p0, _ = model(pos, feats, adj, data.mask)
    p1, _ = model(moved, feats, adj, data.mask)
    v0_moved = (rot.unsqueeze(2) @ v0)[:, perm]                        # R v for each conformer, reordered
    return {"prediction": float((p1 - p0).abs().max() / p0.abs().mean()),
            "scalars": float((x1 - x0[:, perm]).abs().max() / x0.abs().mean()),
            "vectors": float((v1 - v0_moved).abs().max() / v0.abs().mean())}
