"""POMDPs, multi-environment POMDPs and the reduction to an adversarial-belief POMDP.

A POMDP here is arrays: T[a, s, s'], O[a, s', z] (observation after reaching s'), R[a, s], discount.
An ME-POMDP is n POMDPs on the same states, actions and observations, each with its own initial
belief; nature picks one environment and keeps it. Its reduction (Bovy et al., Thm. 2) is one POMDP on
the product space S x [n] with block-diagonal dynamics, whose set of initial beliefs is the convex
hull of b_i (x) e_i: the agent does not know the environment, but learns it from the observations,
and an adversary picks the initial belief. Values of fixed policies are linear in the initial belief,
so the adversary's worst case over that hull sits at a vertex or a mixture found by an LP (`robust.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class POMDP:
    """T [A,S,S'], O [A,S',Z], R [A,S], discount; names for printing."""

    T: np.ndarray
    O: np.ndarray  # noqa: E741 - the POMDP literature's name for the observation function
    R: np.ndarray
    discount: float
    actions: tuple[str, ...] = ()
    observations: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        a, s, s2 = self.T.shape
        if s != s2 or self.O.shape[:2] != (a, s) or self.R.shape != (a, s):
            raise ValueError(f"inconsistent shapes T{self.T.shape} O{self.O.shape} R{self.R.shape}")
        if not (np.allclose(self.T.sum(-1), 1.0) and np.allclose(self.O.sum(-1), 1.0)):
            raise ValueError("rows of T and O must be probability distributions")
        if (self.T < 0).any() or (self.O < 0).any() or not 0.0 < self.discount < 1.0:
            raise ValueError("probabilities must be >= 0 and the discount in (0, 1)")

    @property
    def n_states(self) -> int:
        return self.T.shape[1]

    @property
    def n_actions(self) -> int:
        return self.T.shape[0]

    @property
    def n_observations(self) -> int:
        return self.O.shape[2]

    def observation_probability(self, b: np.ndarray, a: int) -> np.ndarray:
        """P(z | b, a) for every z, [Z] (or [..., Z] for a batch of beliefs)."""
        return (b @ self.T[a]) @ self.O[a]

    def update(self, b: np.ndarray, a: int, z: int) -> np.ndarray:
        """Bayes: b'(s') proportional to O[a, s', z] sum_s T[a, s, s'] b(s). Works on a batch [..., S]."""
        unnorm = (b @ self.T[a]) * self.O[a][:, z]
        norm = unnorm.sum(-1, keepdims=True)
        return np.divide(unnorm, norm, out=np.full_like(unnorm, 1.0 / unnorm.shape[-1]), where=norm > 0)


@dataclass(frozen=True)
class MEPOMDP:
    """Environments on shared S, A, Z (and discount) with their initial beliefs [n, S]."""

    envs: tuple[POMDP, ...]
    initial: np.ndarray
    names: tuple[str, ...]

    def __post_init__(self) -> None:
        first = self.envs[0]
        for e in self.envs[1:]:
            if e.T.shape != first.T.shape or e.O.shape != first.O.shape or e.discount != first.discount:
                raise ValueError("environments must share states, actions, observations and discount")
        if self.initial.shape != (len(self.envs), first.n_states) or not np.allclose(self.initial.sum(-1), 1.0):
            raise ValueError("one initial belief per environment is needed")

    @property
    def n(self) -> int:
        return len(self.envs)


def product(me: MEPOMDP) -> tuple[POMDP, np.ndarray]:
    """The AB-POMDP of `me`: block-diagonal POMDP on S x [n] (index i * S + s) and the vertices b_i (x) e_i [n, nS]."""
    n, s = me.n, me.envs[0].n_states
    a, z = me.envs[0].n_actions, me.envs[0].n_observations
    T = np.zeros((a, n * s, n * s))
    obs = np.zeros((a, n * s, z))
    R = np.zeros((a, n * s))
    vertices = np.zeros((n, n * s))
    for i, e in enumerate(me.envs):
        block = slice(i * s, (i + 1) * s)
        T[:, block, block] = e.T
        obs[:, block] = e.O
        R[:, block] = e.R
        vertices[i, block] = me.initial[i]
    first = me.envs[0]
    return POMDP(T, obs, R, first.discount, first.actions, first.observations), vertices


def environment_block(values: np.ndarray, i: int, n_states: int) -> np.ndarray:
    """The part of product-space vectors [..., nS] that belongs to environment i, [..., S]."""
    return values[..., i * n_states:(i + 1) * n_states]
