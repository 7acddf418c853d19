"""The training-time state of selective learning: each window's latest residual and the uncertainty mask.

``Selector`` is independent of the model and of the loss: a training loop hands it, per batch, the ids of
the windows, the model's absolute residuals and the estimator's, and gets back the boolean mask of the
steps to learn from; at the end of each epoch it recomputes the uncertainty mask. Windows are described
once by the timeline position each horizon step forecasts, so overlapping windows of one series, several
series, or the future steps of PreFM's clips all share one code path.
"""

from __future__ import annotations

import torch

from training.methods.selective.masks import anomaly_keep, position_variance, uncertainty_keep

R_U = 0.3  # share of most uncertain timeline steps dropped per channel (README / demo of the paper)
R_A = 0.3  # share of horizon steps per window and channel dropped as anomalies


class Selector:
    """positions (N, H): timeline index forecast by window n at horizon h; channels: C."""

    def __init__(self, positions: torch.Tensor, channels: int, r_u: float = R_U, r_a: float = R_A,
                 use_uncertainty: bool = True, use_anomaly: bool = True) -> None:
        if positions.dim() != 2:
            raise ValueError(f"positions must be (windows, horizon), got shape {tuple(positions.shape)}")
        if not (0.0 <= r_u < 1.0 and 0.0 <= r_a < 1.0):
            raise ValueError("r_u and r_a must be in [0, 1)")
        self.positions = positions.long()
        self.num_positions = int(self.positions.max()) + 1
        self.r_u, self.r_a = r_u, r_a
        self.use_uncertainty, self.use_anomaly = use_uncertainty, use_anomaly
        n, h = self.positions.shape
        self.history = torch.zeros(n, h, channels)
        self.filled = torch.zeros(n, dtype=torch.bool)
        self.keep_u: torch.Tensor | None = None  # (P, C), from the second epoch on

    def mask(self, windows: torch.Tensor, residual: torch.Tensor,
             estimator_residual: torch.Tensor | None = None) -> torch.Tensor:
        """(B, H, C) bool mask for a batch, and the batch's residuals are recorded for the next epoch.

        residual / estimator_residual: |prediction - target| of the model and of the estimator, (B, H, C).
        """
        residual = residual.detach()
        keep = torch.ones_like(residual, dtype=torch.bool)
        if self.use_uncertainty and self.keep_u is not None:
            pos = self.positions[windows]  # (B, H)
            keep &= self.keep_u[pos]
        self.history[windows] = residual.to(self.history.dtype)
        self.filled[windows] = True
        if self.use_anomaly and estimator_residual is not None:
            keep &= anomaly_keep(residual, estimator_residual.detach(), self.r_a)
        return keep

    def end_epoch(self) -> None:
        """Recompute which timeline steps are too uncertain to learn from, from the latest residuals."""
        if not self.use_uncertainty or not bool(self.filled.any()):
            return
        var, count = position_variance(self.history, self.positions, self.filled, self.num_positions)
        self.keep_u = uncertainty_keep(var, count, self.r_u)

    def kept_share(self) -> float:
        """Share of timeline steps the uncertainty mask keeps (1.0 before the first epoch ends)."""
        return 1.0 if self.keep_u is None else float(self.keep_u.float().mean())
