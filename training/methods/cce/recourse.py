"""Counterfactuals for a logistic model, one by one and collectively.

The model has the risk gate's form, p = sigmoid(((x - mean) / scale) . w + b). All moves are made and costed
in its standardised units u = (x - mean) / scale, where one unit is one standard deviation of a feature.

- `individual_counterfactuals`: each negative alone takes the cheapest valid point, the L2 projection onto
  the level set logit = margin (Wachter-style minimum-cost recourse for a linear model).
- `nearest_positive`: each negative alone copies its nearest positive example (a data-supported recourse).
- `collective_counterfactuals`: the barycentric projection of the unbalanced plan (`transport.py`). The
  positive region of a linear model is a half-space, which is convex, so a barycentre of positives is
  itself positive: every collective recommendation is valid without a repair step.

Features that may not change (`mutable` False) keep their value; only then can a recommendation fall short,
and it is finished by the individual projection along the mutable features.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from training.methods.cce.transport import barycentric_targets, collective_plan


@dataclass(frozen=True)
class LinearModel:
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    bias: float

    @classmethod
    def from_gate(cls, gate) -> LinearModel:
        """The all-data model of a `models.safety.risk_gate.RiskGate`."""
        m = gate.full
        return cls(np.asarray(m.mean, np.float64), np.asarray(m.scale, np.float64), np.asarray(m.coef, np.float64),
                   float(m.bias))

    def standardise(self, x: np.ndarray) -> np.ndarray:
        return (np.asarray(x, np.float64) - self.mean) / self.scale

    def raw(self, u: np.ndarray) -> np.ndarray:
        return u * self.scale + self.mean

    def logit(self, u: np.ndarray) -> np.ndarray:
        """The model's logit at standardised points."""
        return u @ self.coef + self.bias


def _mask(model: LinearModel, mutable: np.ndarray | None) -> np.ndarray:
    return np.ones_like(model.coef, dtype=bool) if mutable is None else np.asarray(mutable, bool)


def individual_counterfactuals(u: np.ndarray, model: LinearModel, margin: float = 0.5,
                               mutable: np.ndarray | None = None) -> np.ndarray:
    """The closest point (L2 over the mutable features) with logit >= margin, for each row of u."""
    w = model.coef * _mask(model, mutable)
    norm2 = float(w @ w)
    if norm2 == 0.0:
        raise ValueError("the model does not depend on any mutable feature")
    short = np.maximum(margin - model.logit(u), 0.0)
    return u + short[:, None] * w[None, :] / norm2


def nearest_positive(u_neg: np.ndarray, u_pos: np.ndarray) -> np.ndarray:
    """Each negative's nearest positive example."""
    from training.methods.cce.transport import squared_cost

    return u_pos[squared_cost(u_neg, u_pos).argmin(1)]


def collective_counterfactuals(u_neg: np.ndarray, u_pos: np.ndarray, model: LinearModel, rho: float,
                               eps: float = 0.002, margin: float = 0.5, mutable: np.ndarray | None = None,
                               ) -> tuple[np.ndarray, np.ndarray]:
    """(recommended points, plan): the barycentric projection of the unbalanced plan from negatives to positives."""
    keep = _mask(model, mutable)
    plan = collective_plan(u_neg[:, keep], u_pos[:, keep], rho, eps)
    targets = u_neg.copy()
    targets[:, keep] = barycentric_targets(plan, u_pos[:, keep])
    if not keep.all():  # fixed features kept their value: finish the ones that fell short
        targets = individual_counterfactuals(targets, model, margin, keep)
    return targets, plan
