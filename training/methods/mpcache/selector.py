"""MPCache's two-stage KV selection (Zeng et al., NeurIPS 2025), for any per-head keys.

Stage 1, look-once static eviction: when a long context is closed, a window of its last queries
attends to all of it once; tokens that none of those queries (averaged over heads) attends to get
evicted for good. Stage 2, query-aware dynamic selection at every decode step, per head, over the
kept tokens, hierarchically over clusters of consecutive tokens:

* level 1, clusters of s1 tokens, summarised by the element-wise max and min of their keys;
  similarity q . (alpha r_max + (1 - alpha) r_min), a linear mix that needs no comparison under
  secret sharing (Quest's max(q r_max, q r_min) does); keep the top ratio1 of clusters plus the first
  (attention sink) and the last (newest, partial) one;
* level 2, the s2 = s1 / 2 halves of the kept clusters only, same similarity, keep the top ratio2 of
  all level-2 clusters plus the first and last;
* attend to the tokens of the kept level-2 clusters.

Top-k then runs over a few dozen clusters instead of thousands of tokens, and the gather is one
one-hot product per cluster, which is what makes the selection cheap under MPC (see `cost.py`).
Keys may have missing entries (`present` False): they never count towards a cluster's bounds, and a
cluster with none present is never chosen by similarity.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class MPCacheConfig:
    """Cluster sizes, kept fractions and the bound mix (defaults from the authors' code)."""

    s1: int = 32
    s2: int = 16
    ratio1: float = 0.5
    ratio2: float = 0.2
    alpha: float = 0.6
    keep_static: float = 0.5  # fraction of tokens the look-once stage keeps
    observer_frac: float = 0.2  # prompt-end window of queries used by the look-once stage

    def __post_init__(self) -> None:
        if self.s1 < 2 or self.s1 != 2 * self.s2:
            raise ValueError("cluster sizes need s1 = 2 * s2 >= 2")
        for name in ("ratio1", "ratio2", "alpha", "keep_static", "observer_frac"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must lie in [0, 1]")


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    z = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def static_scores(keys: np.ndarray, observers: np.ndarray, present: np.ndarray | None = None) -> np.ndarray:
    """max over observer queries of the head-averaged attention each token gets: [H,T,d], [H,W,d] -> [T].
    Absent keys get no attention; a head with no present key is left out of the average."""
    logits = np.einsum("hwd,htd->hwt", observers, keys)
    if present is not None:
        logits = np.where(present[:, None, :], logits, -np.inf)
    live = np.isfinite(logits).any(-1, keepdims=True)
    attn = np.where(live, softmax(np.where(live, logits, 0.0), axis=-1), 0.0)
    heads = np.maximum(live.any(-2).sum(0), 1)  # [1] heads with any present key
    return (attn.sum(axis=0) / heads).max(axis=0)


def static_keep(keys: np.ndarray, observers: np.ndarray, keep: float, present: np.ndarray | None = None) -> np.ndarray:
    """Sorted indices of the `keep` fraction of tokens the observers attend to most."""
    scores = static_scores(keys, observers, present)
    count = max(1, int(round(keep * scores.shape[0])))
    return np.sort(np.argsort(-scores, kind="stable")[:count])


def cluster_bounds(keys: np.ndarray, size: int, present: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Element-wise max and min of each run of `size` tokens ([H,T,d] -> [H,G,d] twice) and which
    clusters hold any present token ([H,G]). The last cluster may be partial."""
    h, t, d = keys.shape
    groups = -(-t // size)
    pad = groups * size - t
    mask = np.ones((h, t), bool) if present is None else present.astype(bool)
    hi = np.where(mask[..., None], keys, -np.inf)
    lo = np.where(mask[..., None], keys, np.inf)
    hi = np.pad(hi, ((0, 0), (0, pad), (0, 0)), constant_values=-np.inf).reshape(h, groups, size, d).max(2)
    lo = np.pad(lo, ((0, 0), (0, pad), (0, 0)), constant_values=np.inf).reshape(h, groups, size, d).min(2)
    any_present = np.pad(mask, ((0, 0), (0, pad))).reshape(h, groups, size).any(2)
    return np.where(any_present[..., None], hi, 0.0), np.where(any_present[..., None], lo, 0.0), any_present


def cluster_scores(query: np.ndarray, r_max: np.ndarray, r_min: np.ndarray, alive: np.ndarray,
                   alpha: float) -> np.ndarray:
    """q . (alpha r_max + (1 - alpha) r_min) per head and cluster; -inf where no token is present."""
    scores = np.einsum("hd,hgd->hg", query, alpha * r_max + (1 - alpha) * r_min)
    return np.where(alive, scores, -np.inf)


def _top(scores: np.ndarray, count: int, always: tuple[int, int]) -> np.ndarray:
    """[H,G] -> bool [H,G]: the `count` best finite scores per row plus the `always` columns."""
    chosen = np.zeros(scores.shape, bool)
    if count > 0:
        order = np.argsort(-scores, axis=-1, kind="stable")[:, :count]
        np.put_along_axis(chosen, order, True, axis=-1)
        chosen &= np.isfinite(scores)
    chosen[:, list(always)] = True
    return chosen


def hierarchical_select(query: np.ndarray, keys: np.ndarray, cfg: MPCacheConfig,
                        present: np.ndarray | None = None, joint: bool = False) -> np.ndarray:
    """Bool [H,T] of the tokens each head attends to (with `joint`, one row [1,T]: a cluster's score is
    its best over heads, for callers that need one shared selection)."""
    t = keys.shape[1]
    r1_max, r1_min, alive1 = cluster_bounds(keys, cfg.s1, present)
    r2_max, r2_min, alive2 = cluster_bounds(keys, cfg.s2, present)
    s1 = cluster_scores(query, r1_max, r1_min, alive1, cfg.alpha)
    s2 = cluster_scores(query, r2_max, r2_min, alive2, cfg.alpha)
    if joint:
        s1, s2 = s1.max(0, keepdims=True), s2.max(0, keepdims=True)
    g1, g2 = s1.shape[1], s2.shape[1]
    level1 = _top(s1, int(g1 * cfg.ratio1), (0, g1 - 1))
    children = np.repeat(level1, 2, axis=1)[:, :g2]  # cluster c at s1 -> clusters 2c and 2c + 1 at s2
    level2 = _top(np.where(children, s2, -np.inf), int(g2 * cfg.ratio2), (0, g2 - 1))
    return np.repeat(level2, cfg.s2, axis=1)[:, :t]


def observer_window(queries: np.ndarray, frac: float) -> np.ndarray:
    """The prompt-end window of queries used by the look-once stage: [H,T,d] -> [H,W,d]."""
    w = max(1, int(round(frac * queries.shape[1])))
    return queries[:, -w:]
