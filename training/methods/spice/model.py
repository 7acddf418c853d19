"""SPiCE: a PaiNN backbone per conformer, geometric MoE, and hierarchical ensemble encoding.

Per block: the backbone updates each conformer (scalars and vectors, layer-normed residual); the
geometric MoE refines both; the conformers' scalars are averaged per topology atom and passed through a
GIN layer on the bond graph (cross-conformer integration); finally every conformer atom attends over
its own conformer, queried by its topology atom's feature (hierarchical ensemble encoding). Readout:
per-conformer atom MLP summed over atoms, mean over conformers, linear. Means over conformers and
attention within a conformer make the output invariant to the order of the conformers; per-conformer
distances and unit vectors make it invariant to each conformer's own rotation and translation.
With M = 1 the same network is the single-conformer baseline.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from training.methods.spice.layers import (
    CrossAttention,
    EquivariantLayerNorm,
    Geometry,
    GINLayer,
    PaiNNBlock,
    mlp,
)
from training.methods.spice.moe import GeometricMoE


@dataclass(frozen=True)
class SpiceConfig:
    """Architecture knobs (paper defaults: 8 experts, top-2, tau 1, z-loss 1e-3; ours smaller for CPU)."""

    n_features: int
    channels: int = 32
    blocks: int = 2
    n_rbf: int = 16
    cutoff: float = 6.0
    n_experts: int = 4
    top_k: int = 2
    tau: float = 1.0
    couple: bool = True  # False: no cross-conformer integration (GIN + attention); conformers encoded alone


class Spice(nn.Module):
    """Conformer-ensemble regressor: (pos [B,M,N,3], features [B,N,F], adj [B,N,N], mask [B,N]) -> [B]."""

    def __init__(self, cfg: SpiceConfig):
        super().__init__()
        c = cfg.channels
        self.cfg = cfg
        self.embed = nn.Linear(cfg.n_features, c)
        self.backbone = nn.ModuleList(PaiNNBlock(c, cfg.n_rbf) for _ in range(cfg.blocks))
        self.norm_x = nn.ModuleList(nn.LayerNorm(c) for _ in range(cfg.blocks))
        self.norm_v = nn.ModuleList(EquivariantLayerNorm(c) for _ in range(cfg.blocks))
        self.moe = nn.ModuleList(GeometricMoE(c, cfg.n_experts, cfg.top_k, cfg.tau) for _ in range(cfg.blocks))
        self.topo = nn.ModuleList(GINLayer(c) for _ in range(cfg.blocks))
        self.attend = nn.ModuleList(CrossAttention(c) for _ in range(cfg.blocks))
        self.atom_out = mlp(c, c, c)
        self.charge = mlp(c, c, 1)
        self.atom_dipole = nn.Linear(c, 1, bias=False)
        self.extent = mlp(c, c, 1)
        self.head = nn.Linear(c + 2, 1)

    def upcycle(self) -> None:
        for m in self.moe:
            m.upcycle()

    def encode(self, pos, features, adj, mask):
        """Per-conformer atom scalars [B,M,N,C] and vectors [B,M,N,3,C], and the router scores."""
        b, m, n, _ = pos.shape
        g = Geometry(pos, mask, self.cfg.n_rbf, self.cfg.cutoff)
        x = self.embed(features).unsqueeze(1).expand(b, m, n, -1)
        v = pos.new_zeros(b, m, n, 3, self.cfg.channels)
        keep = mask[:, None, :, None].to(pos.dtype)
        scores = []
        for i in range(self.cfg.blocks):
            h, dv = self.backbone[i](x, v, g)
            ex, ev = self.norm_x[i](x + h), self.norm_v[i](v + dv)
            mx, v, s = self.moe[i](ex, ev, g)
            scores.append(s)
            if not self.cfg.couple:  # the ablation baseline: each conformer encoded on its own
                x = mx
                continue
            topo = self.topo[i]((mx * keep).mean(1), adj)                   # cross-conformer integration
            x = self.attend[i](topo.unsqueeze(1).expand_as(ex), ex, mask)  # hierarchical ensemble encoding
        return x * keep, v * keep.unsqueeze(-1), scores

    def geometric_readouts(self, x: torch.Tensor, v: torch.Tensor, pos: torch.Tensor,
                           mask: torch.Tensor) -> torch.Tensor:
        """The backbone's QM9-style output modules per conformer, [B,M,2]: dipole magnitude
        |sum_i q_i (r_i - c) + mu_i| and spatial extent sum_i w_i |r_i - c|^2 (c: centroid of the atoms)."""
        keep = mask[:, None, :, None].to(pos.dtype)
        rel = (pos - (pos * keep).sum(-2, keepdim=True) / keep.sum(-2, keepdim=True)) * keep
        mu = (self.charge(x) * rel).sum(-2) + self.atom_dipole(v).squeeze(-1).sum(-2)
        extent = (self.extent(x) * rel.pow(2).sum(-1, keepdim=True)).sum(-2)
        return torch.cat([(mu.pow(2).sum(-1, keepdim=True) + 1e-6).sqrt(), extent], -1)

    def forward(self, pos, features, adj, mask):
        """Prediction [B] and the router z-loss [B] (sum over atoms of logsumexp of the router scores).

        Per conformer: atom MLP summed over atoms (PaiNN's scalar readout) and the geometric readouts;
        all are averaged over conformers before the final linear layer."""
        x, v, scores = self.encode(pos, features, adj, mask)
        keep = mask[:, None, :].to(pos.dtype)
        per_conf = (self.atom_out(x) * keep.unsqueeze(-1)).sum(-2)          # [B,M,C]
        per_conf = torch.cat([per_conf, self.geometric_readouts(x, v, pos, mask)], -1)
        pred = self.head(per_conf.mean(1)).squeeze(-1)
        z = sum((torch.logsumexp(s, -1) * keep).sum((-1, -2)) for s in scores)
        return pred, z
