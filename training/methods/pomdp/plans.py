"""Finite-horizon conditional plans: how solvers return policies and how policies are scored.

A `PlanSet` holds stages 0..H-1. Node k of stage t acts `actions[t][k]`, then moves to node
`successors[t][k, z]` of stage t+1 on observation z; `alphas[t][k]` is its value per start state
under the model it was built for. A plan's value under *another* model is exact by the same backward
recursion (`evaluate`), which is how a policy solved for one environment is scored in the others.
`simulate` runs plans (one root, or a mixture drawn per episode) and `GreedyBelief` runs the stationary
belief-tracking policy that the safety monitor deploys; both are Monte-Carlo checks of the exact values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from training.methods.pomdp.model import POMDP


@dataclass(frozen=True)
class PlanSet:
    actions: list[np.ndarray]      # [K_t] per stage
    successors: list[np.ndarray]   # [K_t, Z] per stage (the last stage's are unused zeros)
    alphas: list[np.ndarray]       # [K_t, S] per stage

    @property
    def horizon(self) -> int:
        return len(self.actions)

    @property
    def roots(self) -> np.ndarray:
        return self.alphas[0]

    def best_root(self, b: np.ndarray) -> int:
        return int(np.argmax(self.roots @ b))


def evaluate(plans: PlanSet, pomdp: POMDP) -> list[np.ndarray]:
    """Exact values [K_t, S] of every node under `pomdp` (any model with the same A and Z)."""
    out: list[np.ndarray] = [np.zeros(0)] * plans.horizon
    nxt = None
    for t in reversed(range(plans.horizon)):
        a = plans.actions[t]
        value = pomdp.R[a].copy()
        if nxt is not None:
            # sum_s' T[a,s,s'] sum_z O[a,s',z] V_{t+1}[succ[k,z], s']
            future = nxt[plans.successors[t]]                              # [K, Z, S']
            weighted = np.einsum("kzs,ksz->ks", future, pomdp.O[a])        # [K, S']
            value += pomdp.discount * np.einsum("kst,kt->ks", pomdp.T[a], weighted)
        out[t] = value
        nxt = value
    return out


def _draw(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One categorical draw per row of p [E, K]."""
    c = p.cumsum(-1)
    return np.minimum((rng.random((p.shape[0], 1)) * c[:, -1:] > c).sum(-1), p.shape[-1] - 1)


def simulate(plans: PlanSet, roots: np.ndarray, pomdp: POMDP, b0: np.ndarray, episodes: int,
             rng: np.random.Generator) -> tuple[float, float]:
    """Mean and standard error of the discounted return; `roots` [K_0] is a distribution over root plans."""
    state = _draw(np.broadcast_to(b0, (episodes, b0.size)), rng)
    node = _draw(np.broadcast_to(roots, (episodes, roots.size)), rng)
    total, disc = np.zeros(episodes), 1.0
    for t in range(plans.horizon):
        a = plans.actions[t][node]
        total += disc * pomdp.R[a, state]
        state = _draw(pomdp.T[a, state], rng)
        z = _draw(pomdp.O[a, state], rng)
        node = plans.successors[t][node, z]
        disc *= pomdp.discount
    return float(total.mean()), float(total.std() / np.sqrt(episodes))


@dataclass(frozen=True)
class GreedyBelief:
    """Stationary policy: track the belief in `model`, act as the best alpha-vector there says."""

    model: POMDP
    alphas: np.ndarray   # [K, S_model]
    actions: np.ndarray  # [K]
    prior: np.ndarray    # [S_model]

    def act(self, b: np.ndarray) -> np.ndarray:
        return self.actions[np.argmax(b @ self.alphas.T, -1)]

    def step(self, b: np.ndarray, a: np.ndarray, z: np.ndarray) -> np.ndarray:
        """Batched Bayes update with a different action and observation per row."""
        unnorm = np.einsum("es,est->et", b, self.model.T[a]) * self.model.O[a, :, z]
        norm = unnorm.sum(-1, keepdims=True)
        return np.divide(unnorm, norm, out=np.broadcast_to(self.prior, unnorm.shape).copy(), where=norm > 0)

    def simulate(self, world: POMDP, b0: np.ndarray, steps: int, episodes: int,
                 rng: np.random.Generator) -> tuple[float, float]:
        """Mean and standard error of the discounted return when the world is `world` started from b0."""
        state = _draw(np.broadcast_to(b0, (episodes, b0.size)), rng)
        b = np.broadcast_to(self.prior, (episodes, self.prior.size)).copy()
        total, disc = np.zeros(episodes), 1.0
        for _ in range(steps):
            a = self.act(b)
            total += disc * world.R[a, state]
            state = _draw(world.T[a, state], rng)
            z = _draw(world.O[a, state], rng)
            b = self.step(b, a, z)
            disc *= world.discount
        return float(total.mean()), float(total.std() / np.sqrt(episodes))
