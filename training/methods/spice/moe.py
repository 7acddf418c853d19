"""Geometric mixture of experts: per-atom top-k routing of scalar and vector features.

Scalars are routed by a graph convolution over the conformer's neighbour graph; vectors by a linear
map of their channel Gram matrix v^T v, which is rotation-invariant, so routing never breaks the
symmetry. A scalar expert is an MLP; a vector expert only rescales each vector channel by gates
computed from the scalars (then an equivariant layer norm), so its output still rotates with the input.
Training adds the paper's Gumbel noise, sigma(s + G1 - G2) with two independent Gumbel-softmax draws.
Upcycling: for the first epochs only expert 0 runs (dense); `upcycle()` then copies it into every expert.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from training.methods.spice.layers import EquivariantLayerNorm, Geometry, mlp


def gcn_operator(g: Geometry) -> torch.Tensor:
    """Symmetric-normalised adjacency with self loops, D^-1/2 (A + I) D^-1/2, per conformer [B,M,N,N]."""
    a = g.pair.to(g.rbf.dtype)
    a = a + torch.diag_embed(g.mask[:, None, :].expand(a.shape[:-1]).to(a.dtype))
    d = a.sum(-1).clamp_min(1.0).rsqrt()
    return d.unsqueeze(-1) * a * d.unsqueeze(-2)


class GeometricMoE(nn.Module):
    """Scalar and vector experts with separate routers; returns (x', v', router scores for the z-loss)."""

    def __init__(self, channels: int, n_experts: int, top_k: int, tau: float = 1.0):
        super().__init__()
        if not 1 <= top_k <= n_experts:
            raise ValueError(f"top_k must be in [1, {n_experts}], got {top_k}")
        c = channels
        self.n_experts, self.top_k, self.tau = n_experts, top_k, tau
        self.router_x = nn.Linear(c, n_experts)            # applied after the GCN propagation
        self.router_v = nn.Linear(c * c, n_experts)
        self.experts_x = nn.ModuleList(mlp(c, c, c, norm=True) for _ in range(n_experts))
        self.gates_v = nn.ModuleList(nn.Sequential(mlp(c, c, c), nn.SiLU(), nn.Linear(c, c, bias=False))
                                     for _ in range(n_experts))
        self.norms_v = nn.ModuleList(EquivariantLayerNorm(c) for _ in range(n_experts))
        self.out_x, self.out_v = nn.LayerNorm(c), EquivariantLayerNorm(c)
        self.dense = True  # upcycling phase: only expert 0

    def upcycle(self) -> None:
        """End the dense phase: every expert starts as a copy of expert 0."""
        for experts in (self.experts_x, self.gates_v, self.norms_v):
            for e in experts[1:]:
                e.load_state_dict(experts[0].state_dict())
        self.dense = False

    def _noisy(self, s: torch.Tensor) -> torch.Tensor:
        if not self.training:
            return torch.sigmoid(s)
        return torch.sigmoid(s + F.gumbel_softmax(s, tau=self.tau, dim=-1) - F.gumbel_softmax(s, tau=self.tau, dim=-1))

    def _weights(self, scores: torch.Tensor) -> torch.Tensor:
        """Dense [.., E] weights: softmax over the top-k scores, zero elsewhere."""
        values, index = scores.topk(self.top_k, dim=-1)
        return torch.zeros_like(scores).scatter(-1, index, torch.softmax(values, -1))

    def forward(self, x: torch.Tensor, v: torch.Tensor, g: Geometry):
        gram = (v.transpose(-1, -2) @ v).flatten(-2)                      # [B,M,N,C*C], invariant
        score_x = self._noisy(torch.softmax(gcn_operator(g) @ self.router_x(x), -1))
        score_v = self._noisy(torch.softmax(self.router_v(gram), -1))
        if self.dense:
            out_x = self.experts_x[0](x)
            out_v = self.norms_v[0](self.gates_v[0](x).unsqueeze(-2) * v)
        else:
            wx, wv = self._weights(score_x), self._weights(score_v)
            out_x = sum(wx[..., e:e + 1] * f(x) for e, f in enumerate(self.experts_x))
            out_v = sum(wv[..., e:e + 1].unsqueeze(-1) * self.norms_v[e](gate(x).unsqueeze(-2) * v)
                        for e, gate in enumerate(self.gates_v))
        scores = torch.softmax(torch.cat([score_x, score_v], -1), -1)
        return self.out_x(out_x + x), self.out_v(out_v + v), scores
