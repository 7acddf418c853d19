"""A cost model of one decoding step of one head under secret sharing (MPC), in comparison units.

Under MPC the price is set by non-linear operations and by how much data is opened, not by FLOPs:

* a secure comparison (max, top-k, index -> one-hot conversion) costs 1 unit;
* a secure exponential (softmax) costs 2 units;
* a product of two secret matrices (m x n)(n x p) with Beaver triples opens both masked inputs:
  0.05 units per opened element, (m n + n p) elements.

These weights are planning assumptions of ours (MPCache's authors measure latency in SecretFlow's
SPU instead); what matters is the structure. Full attention pays T exponentials and T comparisons.
Plaintext-style token top-k pays k T comparisons for the top-k and as many for the one-hot gather,
so it is *dearer* than full attention. MPCache ranks clusters (G << T) and gathers whole clusters.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Weights:
    """Prices of the MPC primitives, in comparison units (our planning defaults; see the grid in the
    experiment for how far the conclusions move with them)."""

    compare: float = 1.0
    exp: float = 2.0
    open: float = 0.05


DEFAULT = Weights()


def matmul(m: int, n: int, p: int, w: Weights = DEFAULT) -> float:
    """Secret x secret product (m x n)(n x p): both masked inputs are opened."""
    return w.open * (m * n + n * p)


def attention(tokens: int, d: int, w: Weights = DEFAULT) -> float:
    """Softmax attention of one query over `tokens` keys: scores, max, exponentials, normalise, output."""
    return (matmul(1, d, tokens, w) + w.compare * tokens + w.exp * tokens + w.open * 2 * tokens
            + matmul(1, tokens, d, w))


def top_k(items: int, k: int, w: Weights = DEFAULT) -> float:
    """k rounds of a secure arg-max over `items` (k * items comparisons) and the one-hot conversion of
    the k indices (another k * items equality tests)."""
    return 2 * w.compare * k * items


@dataclass(frozen=True)
class StepCost:
    full: float
    token_topk: float
    mpcache: float
    quest: float


def decode_step_cost(tokens: int, kept: int, d: int, s1: int, s2: int, k1: int, k2: int,
                     w: Weights = DEFAULT, page: int = 16) -> StepCost:
    """Cost of one step over a cache of `tokens` keys (head dim `d`).

    token_topk: score all tokens, pick k = k2 * s2 of them, gather them (one-hot x K and x V),
    attend. mpcache: over the `kept` tokens the look-once stage left, score the G1 = kept / s1 level-1
    bounds, pick k1, gather the 2 k1 children's bounds, score them, pick k2, gather k2 whole clusters
    of K and V, attend to k2 * s2 tokens. quest: over all `tokens`, the pages' upper bounds need two
    element-wise secret products and a comparison per element, then top-k pages and their gather.
    Cluster and page bounds are built once and not counted.
    """
    k = k2 * s2
    g1, g2 = -(-kept // s1), -(-kept // s2)
    full = attention(tokens, d, w)
    token_topk = matmul(1, d, tokens, w) + top_k(tokens, k, w) + 2 * matmul(k, tokens, d, w) + attention(k, d, w)
    level1 = matmul(1, d, g1, w) + top_k(g1, k1, w) + matmul(k1, g1, 2 * d, w)
    level2 = matmul(1, d, 2 * k1, w) + top_k(2 * k1, k2, w) + matmul(k2, 2 * k1, g2, w)
    gather = 2 * matmul(k2, g2, s2 * d, w)
    pages, kp = -(-tokens // page), max(1, k // page)
    quest = (w.open * 2 * 2 * pages * d + w.compare * pages * d + top_k(pages, kp, w)
             + 2 * matmul(kp, pages, page * d, w) + attention(k, d, w))
    return StepCost(full=full, token_topk=token_topk, mpcache=level1 + level2 + gather + attention(k, d, w),
                    quest=quest)
