"""Finite-horizon tabular CMDPs: exact policy evaluation, the LP optimum, and episode sampling.

A CMDP here is stationary (P, r, c do not depend on the step h) with horizon H and a budget on the expected
cumulative cost: maximise V_r(pi) subject to V_c(pi) <= budget. Policies are deterministic per step, an
array (H, S) of actions; a mixture is a list of them, one drawn per episode, so its values are the means.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog


@dataclass
class CMDP:
    """P (S, A, S) transitions, r and c (S, A) mean reward and cost in [0, 1], mu (S,) start distribution.

    Sampling: the next state comes from P; the cost is one of `cost_samples` (S, A, M) drawn uniformly when
    given (their mean is c), else Bernoulli(c); the reward is r itself when `deterministic_reward`, else
    Bernoulli(r).
    """

    P: np.ndarray
    r: np.ndarray
    c: np.ndarray
    mu: np.ndarray
    horizon: int
    budget: float
    cost_samples: np.ndarray | None = None
    deterministic_reward: bool = False

    @property
    def n_states(self) -> int:
        return self.P.shape[0]

    @property
    def n_actions(self) -> int:
        return self.P.shape[1]


def evaluate(P: np.ndarray, values: np.ndarray, mu: np.ndarray, policies: np.ndarray) -> np.ndarray:
    """Expected cumulative `values` (S, A) from mu under each of the deterministic policies (N, H, S) -> (N,)."""
    n, horizon, S = policies.shape
    v = np.zeros((n, S))
    rows = np.arange(S)
    for h in range(horizon - 1, -1, -1):
        a = policies[:, h, :]
        v = values[rows, a] + np.einsum("nst,nt->ns", P[rows, a], v)
    return v @ mu


def greedy(P: np.ndarray, q_step: np.ndarray, horizon: int) -> np.ndarray:
    """The deterministic policy (H, S) maximising the cumulative per-step value q_step (S, A)."""
    S = P.shape[0]
    v = np.zeros(S)
    policy = np.zeros((horizon, S), dtype=np.int64)
    for h in range(horizon - 1, -1, -1):
        q = q_step + P @ v
        policy[h] = q.argmax(1)
        v = q.max(1)
    return policy


def min_cost(m: CMDP) -> float:
    """The least expected cumulative cost any policy reaches (the Slater slack is budget minus this)."""
    return float(evaluate(m.P, m.c, m.mu, greedy(m.P, -m.c, m.horizon)[None])[0])


def unconstrained_cost(m: CMDP) -> float:
    """The cost of a reward-optimal policy (ties broken toward lower cost): where the budget starts to bind."""
    return float(evaluate(m.P, m.c, m.mu, greedy(m.P, m.r - 1e-6 * m.c, m.horizon)[None])[0])


def lp_optimum(m: CMDP) -> float:
    """max V_r subject to V_c <= budget over all (randomised, step-dependent) policies, by an occupancy LP."""
    S, A, H = m.n_states, m.n_actions, m.horizon
    n = H * S * A
    a_eq = np.zeros((H * S, n))
    b_eq = np.zeros(H * S)
    for h in range(H):
        for s in range(S):
            a_eq[h * S + s, (h * S + s) * A:(h * S + s + 1) * A] = 1.0
        if h == 0:
            b_eq[:S] = m.mu
        else:  # occupancy flowing into step h equals what leaves step h - 1
            prev = slice((h - 1) * S * A, h * S * A)
            a_eq[h * S:(h + 1) * S, prev] -= m.P.reshape(S * A, S).T
    res = linprog(-np.tile(m.r.ravel(), H), A_ub=np.tile(m.c.ravel(), H)[None], b_ub=[m.budget],
                  A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method="highs")
    if res.status != 0:
        raise ValueError(f"CMDP LP failed: {res.message}")
    return float(-res.fun)


def random_cmdp(rng: np.random.Generator, S: int = 6, A: int = 3, horizon: int = 6,
                budget_fraction: float = 0.5) -> CMDP:
    """A random CMDP whose costly actions are also the rewarding ones, with the budget a fraction of the way
    from the least achievable cost to the cost of the unconstrained optimum (so the constraint binds)."""
    P = rng.dirichlet(np.full(S, 0.5), size=(S, A))
    r = rng.uniform(size=(S, A))
    c = 0.5 * rng.uniform(size=(S, A)) + 0.5 * r
    mu = np.zeros(S)
    mu[0] = 1.0
    m = CMDP(P, r, c, mu, horizon, 0.0)
    lo, hi = min_cost(m), unconstrained_cost(m)
    m.budget = lo + budget_fraction * (hi - lo)
    return m


def sample_episode(m: CMDP, policy: np.ndarray, rng: np.random.Generator) -> list[tuple[int, int, float, float, int]]:
    """One episode under a deterministic policy (H, S): a list of (s, a, reward, cost, next state)."""
    s = int(rng.choice(m.n_states, p=m.mu))
    out = []
    for h in range(m.horizon):
        a = int(policy[h, s])
        reward = float(m.r[s, a]) if m.deterministic_reward else float(rng.random() < m.r[s, a])
        if m.cost_samples is not None:
            cost = float(m.cost_samples[s, a, rng.integers(m.cost_samples.shape[2])])
        else:
            cost = float(rng.random() < m.c[s, a])
        nxt = int(rng.choice(m.n_states, p=m.P[s, a]))
        out.append((s, a, reward, cost, nxt))
        s = nxt
    return out
