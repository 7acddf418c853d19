"""What recommendations cost the individuals and what they do to the population.

cost: mean L2 distance moved (standardised units). validity: share of recommendations the model accepts.
near_boundary: share that lands just past the boundary.
MMD: the Gaussian-kernel maximum mean discrepancy between the recommended points and the equilibrium
(positive) population, with the bandwidth fixed from the positives (median pairwise distance), so every
method is measured with the same kernel; 0 means the recommendations are distributed like the positives.
"""

from __future__ import annotations

import numpy as np

from training.methods.cce.transport import squared_cost


def bandwidth(reference: np.ndarray) -> float:
    """Median pairwise distance within the reference population."""
    d = np.sqrt(squared_cost(reference, reference))
    return float(np.median(d[np.triu_indices(len(reference), k=1)]))


def mmd(x: np.ndarray, y: np.ndarray, width: float) -> float:
    """sqrt of the (biased, V-statistic) squared MMD with kernel exp(-|a - b|^2 / (2 width^2))."""
    def k(a, b):
        return float(np.exp(-squared_cost(a, b) / (2.0 * width**2)).mean())

    return float(np.sqrt(max(k(x, x) + k(y, y) - 2.0 * k(x, y), 0.0)))


def mean_cost(before: np.ndarray, after: np.ndarray) -> float:
    return float(np.linalg.norm(after - before, axis=1).mean())


def near_boundary(logits: np.ndarray, width: float = 1.0) -> float:
    """Share of recommendations whose logit is within `width` of the decision boundary: the crowd that
    one-by-one recourse piles onto the boundary, where a small shift of the model undoes it."""
    return float(np.mean(np.asarray(logits) < width))
