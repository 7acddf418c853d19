"""Building blocks of the conformer-ensemble network, on dense padded tensors.

Shapes: B molecules, M conformers, N atoms (padded, `mask` [B,N] marks real ones), C channels.
Scalars x are [B,M,N,C] and rotation-invariant; vectors v are [B,M,N,3,C] and rotate with their own
conformer. Geometry enters only through inter-atomic distances and unit vectors within a conformer,
so a separate rotation (or reflection) and translation of every conformer leaves x unchanged and turns
v by the same matrix: each layer keeps that, which is what makes the whole network symmetric.
"""

from __future__ import annotations

import math

import torch
from torch import nn


def mlp(c_in: int, c_hidden: int, c_out: int, norm: bool = False) -> nn.Sequential:
    """Lin-SiLU-Lin(-SiLU-LayerNorm): the paper's expert and rho shape when `norm`, PaiNN's otherwise."""
    layers: list[nn.Module] = [nn.Linear(c_in, c_hidden), nn.SiLU(), nn.Linear(c_hidden, c_out)]
    if norm:
        layers += [nn.SiLU(), nn.LayerNorm(c_out)]
    return nn.Sequential(*layers)


class EquivariantLayerNorm(nn.Module):
    """Normalise vector channels: centre over channels, divide by the RMS vector norm, scale per channel."""

    def __init__(self, channels: int, eps: float = 1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(channels))
        self.eps = eps

    def forward(self, v: torch.Tensor) -> torch.Tensor:
        v = v - v.mean(-1, keepdim=True)
        scale = (v.pow(2).sum(-2, keepdim=True).mean(-1, keepdim=True) + self.eps).rsqrt()
        return v * scale * self.weight


class Geometry:
    """Pairwise geometry of every conformer: distances, unit vectors, radial basis, neighbour mask."""

    def __init__(self, pos: torch.Tensor, mask: torch.Tensor, n_rbf: int, cutoff: float):
        rel = pos.unsqueeze(-3) - pos.unsqueeze(-2)                   # [B,M,N,N,3]: r_j - r_i
        n = pos.shape[-2]
        eye = torch.eye(n, dtype=torch.bool, device=pos.device)
        atoms = mask[:, None, :, None] & mask[:, None, None, :]
        dist = (rel.pow(2).sum(-1) + (eye | ~atoms).to(pos.dtype)).sqrt()  # 1 off real pairs avoids 0/0
        self.pair = atoms & ~eye & (dist < cutoff)                     # [B,M,N,N]
        self.unit = rel / dist.unsqueeze(-1)
        k = torch.arange(1, n_rbf + 1, dtype=pos.dtype, device=pos.device)
        rbf = torch.sin(k * math.pi * dist.unsqueeze(-1) / cutoff) / dist.unsqueeze(-1)
        fcut = 0.5 * (torch.cos(math.pi * dist / cutoff) + 1.0) * self.pair
        self.rbf = rbf * fcut.unsqueeze(-1)                            # zero off the neighbour graph
        self.mask = mask


class PaiNNBlock(nn.Module):
    """One PaiNN message + update step within each conformer; returns the increments (h, m)."""

    def __init__(self, channels: int, n_rbf: int):
        super().__init__()
        c = channels
        self.phi = mlp(c, c, 3 * c)
        self.filter = nn.Linear(n_rbf, 3 * c)
        self.u = nn.Linear(c, c, bias=False)
        self.w = nn.Linear(c, c, bias=False)
        self.update = mlp(2 * c, c, 3 * c)
        self.c = c

    def forward(self, x: torch.Tensor, v: torch.Tensor, g: Geometry) -> tuple[torch.Tensor, torch.Tensor]:
        c = self.c
        pair = self.phi(x).unsqueeze(-3) * self.filter(g.rbf)          # [B,M,N(i),N(j),3C]
        ds, dvv, dvs = pair.split(c, dim=-1)
        dx = ds.sum(-2)
        dv = (dvv.unsqueeze(-2) * v.unsqueeze(-4)).sum(-3) + (dvs.unsqueeze(-2) * g.unit.unsqueeze(-1)).sum(-3)
        x1, v1 = x + dx, v + dv
        uv, wv = self.u(v1), self.w(v1)
        norm = (wv.pow(2).sum(-2) + 1e-8).sqrt()
        avv, asv, ass = self.update(torch.cat([x1, norm], -1)).split(c, dim=-1)
        h = dx + asv * (uv * wv).sum(-2) + ass
        m = dv + avv.unsqueeze(-2) * uv
        return h, m


class GINLayer(nn.Module):
    """Graph isomorphism layer on the 2D bond graph: MLP((1 + eps) h_i + sum of bonded h_j)."""

    def __init__(self, channels: int):
        super().__init__()
        self.eps = nn.Parameter(torch.zeros(1))
        self.net = mlp(channels, channels, channels, norm=True)

    def forward(self, h: torch.Tensor, adj: torch.Tensor) -> torch.Tensor:
        return self.net((1.0 + self.eps) * h + adj @ h)


class CrossAttention(nn.Module):
    """Hierarchical ensemble encoding: each conformer atom, queried by its topology atom, attends over its conformer."""

    def __init__(self, channels: int):
        super().__init__()
        self.q_norm, self.k_norm = nn.LayerNorm(channels), nn.LayerNorm(channels)
        self.q = nn.Linear(channels, channels, bias=False)
        self.k = nn.Linear(channels, channels, bias=False)
        self.rho = mlp(channels, channels, channels, norm=True)

    def forward(self, topo: torch.Tensor, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """topo [B,M,N,C] (the topology features copied to every conformer), x [B,M,N,C] -> [B,M,N,C]."""
        scores = self.q(self.q_norm(topo)) @ self.k(self.k_norm(x)).transpose(-1, -2)
        scores = scores.masked_fill(~mask[:, None, None, :], float("-inf"))
        return self.rho(torch.softmax(scores, -1) @ x)
