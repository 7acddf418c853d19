"""Distances between the groups' distributions of a representation, as training penalties.

Characteristic-function distance (the paper's FmCF): with frequencies t_j ~ N(0, sigma^2 I), resampled each
step, the empirical characteristic function of group s is phi_s(t) = mean_{i in s} exp(i z_i . t), kept as
its real (cos) and imaginary (sin) parts. The penalty is sum_s w_s mean_j |phi_s(t_j) - phi(t_j)|^2 with phi
the whole batch's function and w_s the group's share: zero exactly when every group's distribution of z
matches the pool at those frequencies. In expectation over Gaussian t it is a Gaussian-kernel MMD, at
O(batch x k) cost instead of O(batch^2). With more than two groups (cameras) each is held to the pool.

Moment matching (the paper's simpler FmSS, here as a baseline) holds each group's mean and covariance to the
pool's: enough to blind a linear probe, not a non-linear one.
"""

from __future__ import annotations

import torch


def sample_frequencies(k: int, dim: int, sigma: float, generator: torch.Generator | None = None) -> torch.Tensor:
    """k frequency vectors t_j ~ N(0, sigma^2 I), as a [dim, k] matrix."""
    return sigma * torch.randn(dim, k, generator=generator)


def ecf(z: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """Empirical characteristic function of the rows of z at frequencies t: [2, k] (real, imaginary)."""
    proj = z @ t
    return torch.stack([torch.cos(proj).mean(0), torch.sin(proj).mean(0)])


def _groups(groups: torch.Tensor) -> list[tuple[torch.Tensor, float]]:
    """Each group present in the batch with its share of the batch (groups of one row carry no shape)."""
    out = []
    for g in torch.unique(groups):
        mask = groups == g
        if int(mask.sum()) > 1:
            out.append((mask, float(mask.float().mean())))
    return out


def cf_distance(z: torch.Tensor, groups: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """sum_s w_s mean_j |phi_s(t_j) - phi(t_j)|^2 over the groups in the batch."""
    pooled = ecf(z, t)
    loss = z.new_zeros(())
    for mask, share in _groups(groups):
        loss = loss + share * (ecf(z[mask], t) - pooled).pow(2).sum(0).mean()
    return loss


def moment_distance(z: torch.Tensor, groups: torch.Tensor) -> torch.Tensor:
    """sum_s w_s (|mu_s - mu|^2 + |Sigma_s - Sigma|_F^2): first and second moments held to the pool's."""
    mu, cov = z.mean(0), torch.cov(z.T, correction=0)
    loss = z.new_zeros(())
    for mask, share in _groups(groups):
        zs = z[mask]
        loss = loss + share * ((zs.mean(0) - mu).pow(2).sum() + (torch.cov(zs.T, correction=0) - cov).pow(2).sum())
    return loss
