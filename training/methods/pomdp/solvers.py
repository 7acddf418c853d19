"""Two ways to compute finite-horizon alpha-vectors (with their plans) of a POMDP.

`exact_plans`: value iteration over all conditional plans, keeping after each cross-sum only the
vectors that are best somewhere on the belief simplex (incremental pruning with Lark's LP filter).
`point_based_plans`: PBVI backups, keeping only the vector that is best at each of a finite set of
beliefs (a lower bound that is exact at those beliefs' plans); `reachable_beliefs` collects such a set
by random walks from given starting beliefs. Both return a `PlanSet`, so plans are executable and can be
scored exactly in any environment.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog

from training.methods.pomdp.model import POMDP
from training.methods.pomdp.plans import PlanSet

EPS = 1e-9


def projections(pomdp: POMDP, alphas: np.ndarray) -> np.ndarray:
    """g[a, z, k, s] = discount * sum_s' T[a,s,s'] O[a,s',z] alpha_k(s')."""
    return pomdp.discount * np.einsum("ast,atz,kt->azks", pomdp.T, pomdp.O, alphas)


def _dominated_pointwise(v: np.ndarray) -> np.ndarray:
    """Rows of v that another row matches or beats everywhere (keeping the first of exact duplicates)."""
    ge = (v[None, :, :] >= v[:, None, :] - EPS).all(-1)   # ge[i, j]: row j >= row i everywhere
    gt = (v[None, :, :] > v[:, None, :] + EPS).any(-1)
    idx = np.arange(len(v))
    return ((ge & gt) | (ge & (idx[None, :] < idx[:, None]))).any(1)


def _witness(w: np.ndarray, others: np.ndarray) -> bool:
    """Is there a belief where w beats every row of `others` by a margin? (LP: max d, b in simplex.)"""
    if len(others) == 0:
        return True
    s = w.size
    c = np.zeros(s + 1)
    c[-1] = -1.0
    a_ub = np.hstack([others - w, np.ones((len(others), 1))])      # (u - w) . b + d <= 0
    res = linprog(c, A_ub=a_ub, b_ub=np.zeros(len(others)), A_eq=np.hstack([np.ones((1, s)), [[0.0]]]),
                  b_eq=[1.0], bounds=[(0, None)] * s + [(None, None)], method="highs")
    return bool(res.status == 0 and -res.fun > 1e-7)


def prune(v: np.ndarray) -> np.ndarray:
    """Indices of the rows of v that are strictly best at some belief (a minimal parsimonious set)."""
    keep = np.flatnonzero(~_dominated_pointwise(v))
    return np.array([k for k in keep if _witness(v[k], v[keep[keep != k]])], dtype=int)


def _last_stage(pomdp: POMDP) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    acts = np.arange(pomdp.n_actions)
    return acts, np.zeros((len(acts), pomdp.n_observations), dtype=int), pomdp.R.copy()


def _stack(stages: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> PlanSet:
    stages = stages[::-1]  # built backwards
    return PlanSet([s[0] for s in stages], [s[1] for s in stages], [s[2] for s in stages])


def exact_plans(pomdp: POMDP, horizon: int) -> PlanSet:
    """All undominated H-step plans (exact value function at every belief)."""
    acts, succ, alphas = _last_stage(pomdp)
    keep = prune(alphas)
    stages = [(acts[keep], succ[keep], alphas[keep])]
    for _ in range(horizon - 1):
        g = projections(pomdp, stages[-1][2])
        new_a, new_s, new_v = [], [], []
        for a in range(pomdp.n_actions):
            vecs, idx = g[a, 0], np.arange(g.shape[2])[:, None]
            for z in range(1, pomdp.n_observations):
                vecs = (vecs[:, None, :] + g[a, z][None, :, :]).reshape(-1, pomdp.n_states)
                idx = np.concatenate([np.repeat(idx, g.shape[2], 0), np.tile(np.arange(g.shape[2]), len(idx))[:, None]], 1)
                k = prune(vecs)
                vecs, idx = vecs[k], idx[k]
            new_a.append(np.full(len(vecs), a))
            new_s.append(idx)
            new_v.append(vecs + pomdp.R[a])
        v, s, a_ = np.concatenate(new_v), np.concatenate(new_s), np.concatenate(new_a)
        k = prune(v)
        stages.append((a_[k], s[k], v[k]))
    return _stack(stages)


def point_based_plans(pomdp: POMDP, beliefs: np.ndarray, horizon: int) -> PlanSet:
    """PBVI: at every stage keep, for each belief, its best backed-up vector (deduplicated)."""
    acts, succ, alphas = _last_stage(pomdp)
    best = np.unique(np.argmax(beliefs @ alphas.T, 1))
    stages = [(acts[best], succ[best], alphas[best])]
    for _ in range(horizon - 1):
        g = projections(pomdp, stages[-1][2])                            # [A,Z,K,S]
        gb = g @ beliefs.T                                               # [A,Z,K,N]
        idx = gb.argmax(2)                                               # [A,Z,N]
        q = beliefs @ pomdp.R.T + np.take_along_axis(gb, idx[:, :, None], 2)[:, :, 0].sum(1).T  # [N,A]
        a = q.argmax(1)
        s = idx[a, :, np.arange(len(beliefs))]                           # [N,Z]
        key = np.unique(np.concatenate([a[:, None], s], 1), axis=0)
        a, s = key[:, 0], key[:, 1:]
        v = pomdp.R[a] + g[a[:, None], np.arange(pomdp.n_observations)[None, :], s].sum(1)
        stages.append((a, s, v))
    return _stack(stages)


def reachable_beliefs(pomdp: POMDP, starts: np.ndarray, n: int, depth: int, rng: np.random.Generator,
                      decimals: int = 6) -> np.ndarray:
    """Up to n distinct beliefs met on random walks (uniform actions) from `starts`, the starts included."""
    seen = {tuple(np.round(b, decimals)): b for b in starts}
    walks = 0
    while len(seen) < n and walks < 2 * n:
        b = starts[walks % len(starts)]
        walks += 1
        for _ in range(depth):
            a = int(rng.integers(pomdp.n_actions))
            pz = pomdp.observation_probability(b, a)
            z = int(rng.choice(len(pz), p=pz / pz.sum()))
            b = pomdp.update(b, a, z)
            seen.setdefault(tuple(np.round(b, decimals)), b)
            if len(seen) >= n:
                break
    return np.stack(list(seen.values()))
