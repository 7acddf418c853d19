"""How much a representation still tells the groups apart, and how unequal the decisions are across groups.

Leakage is measured by probes trained afresh on the representation to predict the group (camera): a
logistic regression and a small MLP, scored by AUC on held-out rows (one-vs-rest, macro-averaged, for more
than two groups). 0.5 means the probe cannot tell the cameras apart. The decision gap is the largest
difference in positive-decision rate between two groups (demographic-parity gap).
"""

from __future__ import annotations

import numpy as np


def positive_rates(decisions: np.ndarray, groups: np.ndarray) -> dict[int, float]:
    return {int(g): float(np.mean(decisions[groups == g])) for g in np.unique(groups)}


def dp_gap(decisions: np.ndarray, groups: np.ndarray) -> float:
    """max_s P(decision = 1 | s) - min_s P(decision = 1 | s)."""
    rates = positive_rates(np.asarray(decisions, np.float64), np.asarray(groups))
    return max(rates.values()) - min(rates.values())


def probe_auc(z_train: np.ndarray, g_train: np.ndarray, z_test: np.ndarray, g_test: np.ndarray,
              kind: str = "mlp", seed: int = 0) -> float:
    """Held-out AUC of a probe that predicts the group from the representation."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if kind == "linear":
        clf = LogisticRegression(max_iter=2000)
    elif kind == "mlp":
        clf = MLPClassifier(hidden_layer_sizes=(64,), max_iter=300, early_stopping=True, random_state=seed)
    else:
        raise ValueError(f"unknown probe {kind!r}")
    probe = make_pipeline(StandardScaler(), clf).fit(z_train, g_train)
    proba = probe.predict_proba(z_test)
    if proba.shape[1] == 2:
        return float(roc_auc_score(g_test, proba[:, 1]))
    return float(roc_auc_score(g_test, proba, multi_class="ovr", average="macro"))
