"""Model-based primal-dual learning for an online CMDP (relaxed and strict feasibility).

Per episode: refresh the empirical model of each (s, a) whose visit count has doubled since its last refresh
(doubling batches), give every pair a bonus beta = min(1, c_b sqrt(L / n)), then run T primal-dual iterations:
  primal: the greedy policy for the Lagrangian with an optimistic reward, (r_hat + beta) - lambda c_hat + P_hat V:
          the reward bonus keeps uncertain pairs being tried (exploration);
  dual:   lambda <- clip(lambda + eta_k (Vbar_c(pi_t) - b'), 0, Lambda), where Vbar_c is the policy's pessimistic
          cumulative cost under the model (c_hat + beta, capped at H - h) and eta_k = eta0 / sqrt(k): the
          constraint is judged pessimistically, so a policy the dual accepts is feasible with high probability.
Two alternatives were measured and rejected (docs/training/cmdp.md): the pessimistic cost inside the primal
as well stops exploring once lambda > 1 (the gap stalls), and an optimistic cost there (bonus (1 + lambda) beta)
drives exploration toward costly unknown pairs as lambda grows and broke strict feasibility.
The episode plays one of the T iterates drawn uniformly (their mixture); the output is the mixture of the
policies played in the second half of the episodes. Relaxed mode aims at b' = b; strict mode at the tightened
b' = b - Delta, with Delta a fraction of the Slater slack, which buys zero violation for a little reward.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from models.cmdp.tabular import greedy

MODES = ("relaxed", "strict")


@dataclass(frozen=True)
class PrimalDualConfig:
    mode: str = "relaxed"
    inner: int = 5  # T primal-dual iterations per episode
    bonus: float = 0.1  # c_b
    delta: float = 0.05  # failure probability in L = log(S A H K / delta)
    eta0: float = 0.5
    tighten: float = 0.3  # strict mode: Delta = tighten * Slater slack
    dual_cap: float | None = None  # Lambda; default 2 H

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")


class EmpiricalModel:
    """Visit counts and sums per (s, a), and the frozen estimates refreshed in doubling batches."""

    def __init__(self, n_states: int, n_actions: int):
        S, A = n_states, n_actions
        self.n = np.zeros((S, A))
        self.trans = np.zeros((S, A, S))
        self.r_sum = np.zeros((S, A))
        self.c_sum = np.zeros((S, A))
        self.n_used = np.zeros((S, A))  # the counts the current estimates were computed from
        self.P = np.full((S, A, S), 1.0 / S)
        self.r = np.zeros((S, A))
        self.c = np.zeros((S, A))

    def add(self, s: int, a: int, reward: float, cost: float, nxt: int) -> None:
        self.n[s, a] += 1
        self.trans[s, a, nxt] += 1
        self.r_sum[s, a] += reward
        self.c_sum[s, a] += cost

    def refresh(self) -> None:
        """Re-estimate only the pairs whose count has at least doubled since their last refresh."""
        due = (self.n >= 2 * self.n_used) & (self.n > 0)
        self.n_used[due] = self.n[due]
        self.P[due] = self.trans[due] / self.n[due][:, None]
        self.r[due] = self.r_sum[due] / self.n[due]
        self.c[due] = self.c_sum[due] / self.n[due]

    def bonus(self, scale: float, log_term: float) -> np.ndarray:
        return np.minimum(1.0, scale * np.sqrt(log_term / np.maximum(1.0, self.n_used)))


def pessimistic_cost(P: np.ndarray, cost: np.ndarray, start: np.ndarray, policy: np.ndarray) -> float:
    """Cumulative pessimistic cost of a policy (H, S) under the model, each step's value capped at H - h."""
    horizon, S = policy.shape
    rows = np.arange(S)
    v = np.zeros(S)
    for h in range(horizon - 1, -1, -1):
        a = policy[h]
        v = np.minimum(horizon - h, cost[rows, a] + P[rows, a] @ v)
    return float(v @ start)


class PrimalDual:
    """The learner. `plan(start)` returns the T policies of the next episode; `observe` feeds its transitions."""

    def __init__(self, n_states: int, n_actions: int, horizon: int, budget: float, config: PrimalDualConfig,
                 slater_slack: float = 0.0, episodes: int = 1000):
        self.config, self.horizon = config, horizon
        self.model = EmpiricalModel(n_states, n_actions)
        self.lam = 0.0
        self.cap = config.dual_cap if config.dual_cap is not None else 2.0 * horizon
        self.target = budget - (config.tighten * slater_slack if config.mode == "strict" else 0.0)
        self.log_term = float(np.log(n_states * n_actions * horizon * max(episodes, 2) / config.delta))
        self.episode = 0

    def plan(self, start: np.ndarray) -> list[np.ndarray]:
        """T primal-dual iterations from the start distribution; the episode should play one of them at random."""
        self.episode += 1
        m, cfg = self.model, self.config
        m.refresh()
        beta = m.bonus(cfg.bonus, self.log_term)
        reward_opt, cost_pes = m.r + beta, m.c + beta
        eta = cfg.eta0 / np.sqrt(self.episode)
        policies = []
        for _ in range(cfg.inner):
            # no truncation of the Lagrangian's values: clipping them at H - h ties saturated actions and
            # erases the cost term from the choice (measured: strict runs then overshoot the budget)
            pi = greedy(m.P, reward_opt - self.lam * m.c, self.horizon)
            policies.append(pi)
            vbar = pessimistic_cost(m.P, cost_pes, start, pi)
            self.lam = float(np.clip(self.lam + eta * (vbar - self.target), 0.0, self.cap))
        return policies

    def observe(self, transitions: Sequence[tuple[int, int, float, float, int]]) -> None:
        for s, a, reward, cost, nxt in transitions:
            self.model.add(s, a, reward, cost, nxt)
