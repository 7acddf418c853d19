"""The fixed subspace that makes a stage boundary compressible without loss.

Every stage builds the same orthonormal basis U (d x k, QR of a seeded Gaussian) and the same frozen
high-rank token table from one seed, so neither ever crosses the wire (positions are rotary, inside attention). Layers whose
output feeds the residual stream before the last boundary write only into span(U) (`SubspaceLinear`,
`SubspaceEmbedding`), so at a boundary x - fixed(tokens) lies in span(U): sending its k coordinates and the
token ids lets the receiver rebuild x exactly, and the gradient sent back, g U, loses nothing either,
because every upstream Jacobian already has its columns in span(U).
"""

from __future__ import annotations

import torch
from torch import nn


def seeded_basis(d: int, k: int, seed: int) -> torch.Tensor:
    """An orthonormal d x k basis, identical on every stage that uses the same seed."""
    g = torch.Generator().manual_seed(seed)
    q, _ = torch.linalg.qr(torch.randn(d, k, generator=g, dtype=torch.float64))
    return q.to(torch.float32).contiguous()


class Subspace(nn.Module):
    """U and the frozen fixed part of the residual stream, rebuilt from a seed on each stage (buffers only)."""

    def __init__(self, d: int, k: int, vocab: int, seed: int):
        super().__init__()
        g = torch.Generator().manual_seed(seed + 1)
        self.register_buffer("basis", seeded_basis(d, k, seed))
        self.register_buffer("token_table", torch.randn(vocab, d, generator=g))

    @property
    def k(self) -> int:
        return self.basis.shape[1]

    def fixed(self, tokens: torch.Tensor) -> torch.Tensor:
        """The high-rank part of the residual stream that any stage can recompute from the token ids."""
        return self.token_table[tokens]

    def encode(self, x: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """Coordinates (..., k) of the residual stream's learned part in span(U)."""
        return (x - self.fixed(tokens)) @ self.basis

    def decode(self, coords: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """The residual stream rebuilt from its coordinates and the token ids."""
        return coords @ self.basis.T + self.fixed(tokens)


class SubspaceLinear(nn.Module):
    """A linear map whose output lies in span(U): y = (x A^T + a) U^T with A (k x in) trainable."""

    def __init__(self, in_features: int, subspace: Subspace):
        super().__init__()
        self.subspace = subspace
        self.inner = nn.Linear(in_features, subspace.k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x) @ self.subspace.basis.T


class SubspaceEmbedding(nn.Module):
    """A token embedding with trainable k-dim coordinates on top of the fixed high-rank table."""

    def __init__(self, vocab: int, subspace: Subspace):
        super().__init__()
        self.subspace = subspace
        self.token = nn.Embedding(vocab, subspace.k)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.token(tokens) @ self.subspace.basis.T + self.subspace.fixed(tokens)


class FullEmbedding(nn.Module):
    """The unconstrained baseline: an ordinary trainable token embedding of width d."""

    def __init__(self, vocab: int, d: int):
        super().__init__()
        self.token = nn.Embedding(vocab, d)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.token(tokens)
