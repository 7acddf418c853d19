"""Selective learning's two masks and the masked loss (Fu et al., "Selective Learning for Deep Time Series
Forecasting", NeurIPS 2025; behaviour of BasicTS's ``SelectiveLearning`` callback).

A forecaster trained with plain MSE chases every target step, including noise bursts it cannot predict
and one-off spikes it can only memorise. Selective learning averages the loss over the steps that pass
two tests:

* uncertainty: a timeline step is *uncertain* when the residuals of the different windows that forecast
  it (at different horizons) disagree. Under a Gaussian residual the entropy is a monotone function of
  the variance, so the variance ranks the steps; the ``r_u`` most variable steps of each channel are
  dropped. It is recomputed at the end of each epoch from the latest residual of every window.
* anomaly: a simple estimator fitted beforehand with plain MSE (linear here) gives a lower bound on what
  is learnable. Where the model's residual falls far *below* the estimator's it is fitting something
  unpredictable (a spike); per window and channel the ``r_a`` share of horizon steps with the smallest
  ``r - r_estimator`` is dropped.
"""

from __future__ import annotations

import torch


def masked_mse(pred: torch.Tensor, target: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """sum(M (pred - target)^2) / sum(M); plain MSE without a mask."""
    sq = (pred - target) ** 2
    if mask is None:
        return sq.mean()
    m = mask.to(sq.dtype)
    return (sq * m).sum() / m.sum().clamp(min=1.0)


def position_variance(residuals: torch.Tensor, positions: torch.Tensor, filled: torch.Tensor,
                      num_positions: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Variance over windows of the residuals that land on each timeline position.

    residuals (N, H, C): the latest |residual| of window n at horizon h; positions (N, H): the timeline
    index window n forecasts at horizon h; filled (N,): windows that have a residual yet. Returns the
    population variance (P, C) and the number of residuals behind it (P,).
    """
    C = residuals.shape[-1]
    r = residuals[filled].reshape(-1, C).double()
    pos = positions[filled].reshape(-1)
    count = torch.zeros(num_positions, dtype=torch.float64).index_add_(0, pos, torch.ones_like(pos, dtype=torch.float64))
    s1 = torch.zeros(num_positions, C, dtype=torch.float64).index_add_(0, pos, r)
    s2 = torch.zeros(num_positions, C, dtype=torch.float64).index_add_(0, pos, r * r)
    n = count.clamp(min=1.0)[:, None]
    var = (s2 / n - (s1 / n) ** 2).clamp(min=0.0)
    return var.float(), count.float()


def uncertainty_keep(var: torch.Tensor, count: torch.Tensor, ratio: float) -> torch.Tensor:
    """(P, C) bool: False for the ``ratio`` share of most variable positions of each channel.

    Only positions seen by at least two windows have a variance; the others are kept.
    """
    keep = torch.ones_like(var, dtype=torch.bool)
    seen = count >= 2
    if ratio <= 0 or int(seen.sum()) < 2:
        return keep
    threshold = torch.quantile(var[seen], 1.0 - ratio, dim=0)  # (C,)
    keep[seen] = var[seen] < threshold
    return keep


def anomaly_keep(residual: torch.Tensor, estimator_residual: torch.Tensor, ratio: float) -> torch.Tensor:
    """(B, H, C) bool: per window and channel, False for the ``ratio`` share of horizon steps where the
    model's residual is furthest below the estimator's (the model fits what a simple model cannot).
    The largest step of each row is always kept, so a row of ties is not dropped whole."""
    if ratio <= 0:
        return torch.ones_like(residual, dtype=torch.bool)
    dist = residual - estimator_residual
    threshold = torch.quantile(dist, ratio, dim=1, keepdim=True)
    return (dist > threshold) | (dist >= dist.amax(dim=1, keepdim=True))
