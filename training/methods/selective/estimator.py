"""The frozen estimator behind the anomaly mask: a linear map from the input window to the forecast,
fitted once in closed form (ridge) with plain squared error on the training windows.

The paper uses DLinear trained with MSE; a ridge regression is the same model class (linear in the
window) without an optimiser to tune. A linear model cannot reproduce an isolated spike, so its residual
marks what is learnable; a deep model fitting far below it is memorising.
"""

from __future__ import annotations

import torch


class RidgeEstimator:
    """y = [x, 1] W with W = argmin |[X, 1] W - Y|^2 + alpha |W|^2 (bias not penalised)."""

    def __init__(self, alpha: float = 1.0) -> None:
        if alpha < 0:
            raise ValueError("alpha must be >= 0")
        self.alpha = alpha
        self.weight: torch.Tensor | None = None
        self.out_shape: tuple[int, ...] = ()

    def fit(self, x: torch.Tensor, y: torch.Tensor) -> RidgeEstimator:
        """x (N, ...) inputs, y (N, ...) targets; both are flattened per sample."""
        X = self._design(x)
        Y = y.reshape(len(y), -1).double()
        penalty = self.alpha * torch.eye(X.shape[1], dtype=torch.float64)
        penalty[-1, -1] = 0.0
        self.weight = torch.linalg.solve(X.T @ X + penalty, X.T @ Y)
        self.out_shape = tuple(y.shape[1:])
        return self

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        if self.weight is None:
            raise RuntimeError("fit the estimator first")
        return (self._design(x) @ self.weight).float().reshape(len(x), *self.out_shape)

    @staticmethod
    def _design(x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(len(x), -1).double()
        return torch.cat([flat, torch.ones(len(x), 1, dtype=torch.float64)], dim=1)
