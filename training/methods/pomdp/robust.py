"""Robust policies of an ME-POMDP through its adversarial-belief reduction.

For plans with root values alpha_k on the product space and the vertices v_j = b_j (x) e_j of the
adversary's belief set, M[k, j] = alpha_k . v_j is plan k's value in environment j. Two LPs with the
same optimum (minimax) answer the problem on that plan set:
  worst-case belief:  min_{lambda in simplex, v} v   s.t.  sum_j lambda_j M[k, j] <= v  for all k
  robust mixed plan:  max_{y in simplex, v} v        s.t.  sum_k y_k M[k, j] >= v  for all j
`solve` builds the plans exactly (small problems) or point-based; the point-based loop is AB-style:
it adds the beliefs reachable from the current worst-case prior and re-solves until the robust value
settles.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import linprog

from training.methods.pomdp.model import MEPOMDP, POMDP, product
from training.methods.pomdp.plans import PlanSet
from training.methods.pomdp.solvers import exact_plans, point_based_plans, reachable_beliefs


def worst_case_prior(m: np.ndarray) -> tuple[float, np.ndarray]:
    """Primal LP on M [K, n]: the adversary's mixture lambda over environments and the value it forces."""
    k, n = m.shape
    res = linprog(np.r_[np.zeros(n), 1.0], A_ub=np.hstack([m, -np.ones((k, 1))]), b_ub=np.zeros(k),
                  A_eq=np.r_[np.ones(n), 0.0][None], b_eq=[1.0], bounds=[(0, None)] * n + [(None, None)],
                  method="highs")
    if res.status != 0:
        raise RuntimeError(f"worst-case LP failed: {res.message}")
    lam = np.clip(res.x[:n], 0, None)
    return float(res.x[-1]), lam / lam.sum()


def robust_mixture(m: np.ndarray) -> tuple[float, np.ndarray]:
    """Dual LP on M [K, n]: the distribution y over plans maximising the worst environment's value."""
    k, n = m.shape
    res = linprog(np.r_[np.zeros(k), -1.0], A_ub=np.hstack([-m.T, np.ones((n, 1))]), b_ub=np.zeros(n),
                  A_eq=np.r_[np.ones(k), 0.0][None], b_eq=[1.0], bounds=[(0, None)] * k + [(None, None)],
                  method="highs")
    if res.status != 0:
        raise RuntimeError(f"robust-mixture LP failed: {res.message}")
    y = np.clip(res.x[:k], 0, None)
    return float(-res.fun), y / y.sum()


@dataclass
class RobustSolution:
    """Plans on the product space with their value table, the LPs' answers, and the solver's trace."""

    pomdp: POMDP                 # the product (AB-)POMDP
    vertices: np.ndarray         # [n, nS]
    plans: PlanSet
    values: np.ndarray           # M [K, n]
    value: float                 # robust (max-min) value of the mixed plan
    mixture: np.ndarray          # y [K]
    prior: np.ndarray            # lambda [n]: the adversary's worst mixture of environments
    history: list[float] = field(default_factory=list)

    @property
    def worst_belief(self) -> np.ndarray:
        return self.prior @ self.vertices

    @property
    def best_pure(self) -> int:
        """The single plan with the best worst case (no randomisation)."""
        return int(np.argmax(self.values.min(1)))


def _answer(pomdp, vertices, plans, history) -> RobustSolution:
    m = plans.roots @ vertices.T
    value, y = robust_mixture(m)
    _, lam = worst_case_prior(m)
    return RobustSolution(pomdp, vertices, plans, m, value, y, lam, history + [value])


def solve(me: MEPOMDP, horizon: int, method: str = "point", n_beliefs: int = 300, rounds: int = 4,
          depth: int = 25, tol: float = 1e-3, seed: int = 0) -> RobustSolution:
    """Robust plans for `me` over `horizon` steps; method "exact" or "point" (AB-style belief refinement)."""
    pomdp, vertices = product(me)
    if method == "exact":
        return _answer(pomdp, vertices, exact_plans(pomdp, horizon), [])
    if method != "point":
        raise ValueError(f"unknown method {method!r} (exact or point)")
    rng = np.random.default_rng(seed)
    beliefs = reachable_beliefs(pomdp, vertices, n_beliefs, depth, rng)
    history: list[float] = []
    sol = _answer(pomdp, vertices, point_based_plans(pomdp, beliefs, horizon), history)
    for _ in range(rounds - 1):
        more = reachable_beliefs(pomdp, sol.worst_belief[None], n_beliefs // 2, depth, rng)
        beliefs = np.concatenate([beliefs, more])
        prev, history = sol.value, sol.history
        sol = _answer(pomdp, vertices, point_based_plans(pomdp, beliefs, horizon), history)
        if abs(sol.value - prev) < tol:
            break
    return sol


def single_environment(me: MEPOMDP, i: int, horizon: int, n_beliefs: int = 300, depth: int = 25,
                       seed: int = 0) -> PlanSet:
    """Point-based plans for environment i alone (what one would deploy trusting that sensor model)."""
    env = me.envs[i]
    beliefs = reachable_beliefs(env, me.initial[i][None], n_beliefs, depth, np.random.default_rng(seed))
    return point_based_plans(env, beliefs, horizon)
