"""The published KV selections MPCache is measured against, at the same number of tokens per head and step.

* H2O (Zhang et al., 2023): keep the heavy hitters, the tokens with the largest attention accumulated over
  every query seen so far (the prompt-end queries and the earlier decoding steps), plus a recent window;
  half of the budget each, as in its default split.
* SnapKV (Li et al., 2024): once, when the prompt closes, the last 32 prompt queries vote with their
  attention per head; the votes are max-pooled over neighbouring positions (kernel 7) so whole phrases are
  kept, and each head keeps its top positions.
* Quest (Tang et al., 2024): query-aware at every step over the whole cache, pages of 16 tokens bounded by
  their element-wise key max and min; a page's score is the upper bound sum_d max(q_d max_d, q_d min_d),
  which needs a comparison per element (MPCache's alpha mix is its comparison-free variant).
"""

from __future__ import annotations

import numpy as np

from training.methods.mpcache.selector import cluster_bounds
from training.methods.mpcache.synthetic import attention_probs

SNAP_WINDOW, SNAP_KERNEL, QUEST_PAGE = 32, 7, 16


def _top_per_head(scores: np.ndarray, counts: np.ndarray) -> np.ndarray:
    chosen = np.zeros(scores.shape, bool)
    for h, k in enumerate(counts):
        chosen[h, np.argsort(-scores[h], kind="stable")[:k]] = True
    return chosen


def h2o(keys: np.ndarray, seen: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Heavy hitters of the attention accumulated over the queries `seen` [H,Q,d], plus the newest tokens."""
    t = keys.shape[1]
    acc = sum(attention_probs(seen[:, i], keys) for i in range(seen.shape[1]))
    chosen = np.zeros((keys.shape[0], t), bool)
    for h, k in enumerate(counts):
        recent = k // 2
        chosen[h, t - recent:] = True
        heavy = np.argsort(-acc[h, : t - recent], kind="stable")[: k - recent]
        chosen[h, heavy] = True
    return chosen


def snapkv(keys: np.ndarray, observers: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """SnapKV's one-off selection from the last `SNAP_WINDOW` prompt queries, pooled votes per head."""
    window = observers[:, -SNAP_WINDOW:]
    votes = sum(attention_probs(window[:, i], keys) for i in range(window.shape[1]))
    pad = SNAP_KERNEL // 2
    padded = np.pad(votes, ((0, 0), (pad, pad)), constant_values=-np.inf)
    pooled = np.lib.stride_tricks.sliding_window_view(padded, SNAP_KERNEL, axis=1).max(-1)
    return _top_per_head(pooled, counts)


def quest(query: np.ndarray, keys: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Quest's pages by their attention upper bound, as many whole pages as the budget allows."""
    t = keys.shape[1]
    r_max, r_min, alive = cluster_bounds(keys, QUEST_PAGE)
    bound = np.maximum(query[:, None, :] * r_max, query[:, None, :] * r_min).sum(-1)
    bound = np.where(alive, bound, -np.inf)
    pages = _top_per_head(bound, np.maximum(1, counts // QUEST_PAGE))
    return np.repeat(pages, QUEST_PAGE, axis=1)[:, :t]
