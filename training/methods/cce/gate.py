"""Collective explanations of the safety risk gate (`models/safety/risk_gate.py`).

The gate is a standardise-then-logistic model over `gate_features`: three retrieval scores, five novelty
features for each of three similarity parts (TF-IDF, MiniLM text, MiniLM act), then the newest segment's MiniLM
vector and its difference from the earlier segments. Given the feature rows of a population the gate did not
flag (negatives) and of a population it flags (the equilibrium), `explain_gate` says how each negative's
features would have to change for the gate to flag it, collectively (`recourse.py`), and `summarise` names the
features the population is asked to change most. The MiniLM coordinates are not actions anyone can take, so
`readable_only()` marks the 18 named features as the only mutable ones when the caller wants that.
Nothing in the gate changes; this only reads its all-data model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from training.methods.cce.recourse import LinearModel, collective_counterfactuals

PARTS = ("tf", "text", "act")  # as models.safety.risk_gate.PARTS
SCORE_NAMES = ("total", "newest_segment", "margin") + tuple(
    f"{part}_{what}" for part in PARTS
    for what in ("newest", "novelty_vs_mean", "novelty_vs_max", "rule_newest", "rule_change"))


def gate_feature_names(dim: int) -> list[str]:
    """Names of the gate's features: the 18 scores, then the two MiniLM halves."""
    rest = dim - len(SCORE_NAMES)
    if rest < 0 or rest % 2:
        raise ValueError(f"a gate feature row has 18 scores and two equal MiniLM halves, not {dim} values")
    half = rest // 2
    return list(SCORE_NAMES) + [f"minilm_newest[{i}]" for i in range(half)] + [f"minilm_change[{i}]" for i in range(half)]


def readable_only(dim: int) -> np.ndarray:
    """A mutable mask that lets only the 18 named scores change."""
    mask = np.zeros(dim, bool)
    mask[:len(SCORE_NAMES)] = True
    return mask


@dataclass
class GateRecommendations:
    targets: np.ndarray  # [N, D] recommended feature rows (raw units)
    changes: np.ndarray  # targets - negatives (raw units)
    cost: np.ndarray  # [N] distance moved, in standard deviations of the features
    probability: np.ndarray  # [N] the gate's probability at the recommended rows
    exemplar: np.ndarray  # [N] for each negative, the positive that receives most of its mass


def explain_gate(gate, negatives: np.ndarray, positives: np.ndarray, rho: float = 1.0, eps: float = 0.002,
                 mutable: np.ndarray | None = None) -> GateRecommendations:
    """Collective recommendations for the rows the gate did not flag, towards the rows it flags."""
    model = LinearModel.from_gate(gate)
    u_neg, u_pos = model.standardise(negatives), model.standardise(positives)
    targets, plan = collective_counterfactuals(u_neg, u_pos, model, rho, eps, mutable=mutable)
    raw = model.raw(targets)
    return GateRecommendations(targets=raw, changes=raw - np.asarray(negatives, np.float64),
                               cost=np.linalg.norm(targets - u_neg, axis=1),
                               probability=1.0 / (1.0 + np.exp(-model.logit(targets))), exemplar=plan.argmax(1))


def summarise(rec: GateRecommendations, scale: np.ndarray, names: list[str], top: int = 5) -> list[dict]:
    """The `top` features with the largest mean change in standard deviations, with the raw mean change and
    the share of individuals asked to raise them."""
    std_change = rec.changes / np.asarray(scale, np.float64)
    order = np.argsort(-np.abs(std_change).mean(0))[:top]
    return [{"feature": names[i], "mean_change_sd": float(np.abs(std_change[:, i]).mean()),
             "mean_change": float(rec.changes[:, i].mean()), "share_raised": float(np.mean(rec.changes[:, i] > 0))}
            for i in order]
