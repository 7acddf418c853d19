"""The collective plan: unbalanced optimal transport from the negative population to the positive one.

Following the paper, the plan pi between negatives x_i (mass a_i) and positives y_j (mass b_j) solves
    min_pi  <C, pi> + eps KL(pi | a b^T) + rho1 KL(pi 1 | a) + rho2 KL(pi^T 1 | b)
with C the squared Euclidean cost scaled to [0, 1] (so eps and rho do not depend on the feature units, and
exp(-C / eps) stays representable in float64 down to eps ~ 0.002).
rho1 is infinite here: every negative receives a recommendation, its whole mass moves. rho2 prices
deviation from the equilibrium population: rho2 -> 0 lets everyone take the cheapest positive (one-by-one
recourse, crowding), rho2 -> infinity is balanced transport (the recommendations reproduce the positive
population). Solved with POT's generalised Sinkhorn (`ot.unbalanced.sinkhorn_unbalanced`, translation-invariant
variant; POT 0.9.7's `sinkhorn_stabilized` loses the mass when one marginal penalty is infinite).

Each negative's recommendation is the plan's barycentric projection T(x_i) = sum_j pi_ij y_j / sum_j pi_ij.
"""

from __future__ import annotations

import numpy as np


def squared_cost(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """|x_i - y_j|^2 for every pair, [len(x), len(y)]."""
    d = (x * x).sum(1)[:, None] + (y * y).sum(1)[None, :] - 2.0 * x @ y.T
    return np.maximum(d, 0.0)


def collective_plan(negatives: np.ndarray, positives: np.ndarray, rho: float, eps: float = 0.002,
                    iterations: int = 5000) -> np.ndarray:
    """The unbalanced plan (uniform masses, rho1 = inf, rho2 = rho), [len(negatives), len(positives)]."""
    import ot

    cost = squared_cost(negatives.astype(np.float64), positives.astype(np.float64))
    cost /= max(float(cost.max()), 1e-12)
    a = np.full(len(negatives), 1.0 / len(negatives))
    b = np.full(len(positives), 1.0 / len(positives))
    plan = ot.unbalanced.sinkhorn_unbalanced(a, b, cost, reg=eps, reg_m=(float("inf"), rho),
                                             method="sinkhorn_translation_invariant", numItermax=iterations,
                                             stopThr=1e-9)
    if not np.all(np.isfinite(plan)) or not np.allclose(plan.sum(1), a, rtol=1e-3):
        raise RuntimeError("unbalanced Sinkhorn did not converge to the source marginal; raise eps")
    return plan


def barycentric_targets(plan: np.ndarray, positives: np.ndarray) -> np.ndarray:
    """T(x_i) = sum_j pi_ij y_j / sum_j pi_ij."""
    rows = plan.sum(1, keepdims=True)
    if np.any(rows <= 0):
        raise ValueError("the plan gives a negative no mass: raise eps or the iterations")
    return (plan @ positives) / rows
