"""Is something risky happening *now*? A calibrated yes/no, separate from "which rule is closest".

Retrieval always names the closest rule, and a log cut just before its risky act scores almost as
high as the full log. The gate looks at what changed with the newest segment instead: how strongly
it matches any rule compared with the earlier segments (novelty), how far the chosen rule stands out,
and the newest segment's MiniLM vector and its difference from the earlier ones (what kind of act it
describes). A logistic regression turns these into a probability. It never sees a rule's identity,
so it does not learn which dev rules exist; it is trained on log *structure*: every prefix of a dev
log that ends before the risky segment is a negative, the full log (and its perturbed copies) a positive.

Honest evaluation: the file keeps one model per fold (logs split into 5 folds by a hash of their
text) besides the model fitted on all logs. `probability(analysis, log_text)` uses the fold model that
never saw `log_text` when it was a training log, so dev-log numbers are held-out numbers.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models.safety.knowledge import PACKAGE_DATA
from models.safety.retrieval import Analysis

GATE_FILE = PACKAGE_DATA / "risk_gate.npz"
FOLDS = 5
PARTS = ("tf", "text", "act")


def log_key(text: str) -> str:
    """Stable identity of a log (whitespace-insensitive)."""
    return hashlib.sha1(" ".join(text.split()).encode("utf-8")).hexdigest()


def log_fold(text: str, folds: int = FOLDS) -> int:
    return int(log_key(text)[:8], 16) % folds


def gate_features(a: Analysis) -> np.ndarray:
    """Rule-agnostic features of the newest segment of an analysed log (needs embeddings)."""
    if a.vectors is None:
        raise ValueError("the risk gate needs sentence embeddings (use_embeddings=True)")
    n = len(a.segments)
    order = np.argsort(-a.total)
    r = int(order[0])
    margin = float(a.total[r] - a.total[order[1]]) if len(order) > 1 else 0.0
    f = [float(a.total[r]), float(a.per_segment[-1, r]), margin]
    for name in PARTS:
        s = a.parts[name]
        newest = float(s[-1].max())
        prev = s[:-1].max(1) if n > 1 else np.zeros(1, dtype=np.float32)
        prev_r = float(s[:-1, r].mean()) if n > 1 else 0.0
        f += [newest, newest - float(prev.mean()), newest - float(prev.max()), float(s[-1, r]), float(s[-1, r]) - prev_r]
    last = a.vectors[-1]
    before = a.vectors[:-1].mean(0) if n > 1 else np.zeros_like(last)
    return np.concatenate([np.asarray(f, dtype=np.float32), last, last - before]).astype(np.float32)


@dataclass
class _Linear:
    """Standardise, then logistic regression: p = sigmoid(((x - mean) / scale) @ coef + bias)."""

    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    bias: float

    def __call__(self, x: np.ndarray) -> np.ndarray:
        z = ((x - self.mean) / self.scale) @ self.coef + self.bias
        return 1.0 / (1.0 + np.exp(-z))


def _fit_linear(x: np.ndarray, y: np.ndarray, weight: np.ndarray, c: float) -> _Linear:
    from sklearn.linear_model import LogisticRegression

    mean, scale = x.mean(0), x.std(0) + 1e-6
    clf = LogisticRegression(C=c, max_iter=3000).fit((x - mean) / scale, y, sample_weight=weight)
    return _Linear(mean.astype(np.float32), scale.astype(np.float32), clf.coef_[0].astype(np.float32),
                   float(clf.intercept_[0]))


class RiskGate:
    """The full-data model plus one held-out model per fold, and the keys of the training logs."""

    def __init__(self, full: _Linear, folds: list[_Linear], train_keys: set[str]):
        self.full, self.folds, self.train_keys = full, folds, train_keys

    def probability(self, a: Analysis, log_text: str | None = None) -> float:
        """P(the newest segment shows a risky act); held-out when `log_text` was a training log."""
        model = self.full
        if log_text is not None and self.folds and log_key(log_text) in self.train_keys:
            model = self.folds[log_fold(log_text, len(self.folds))]
        return float(model(gate_features(a)[None])[0])

    def held_out(self, log_text: str) -> RiskGate:
        """The gate to use on `log_text`: its fold's model if it was a training log, else this gate."""
        if not self.folds or log_key(log_text) not in self.train_keys:
            return self
        return RiskGate(self.folds[log_fold(log_text, len(self.folds))], [], set())

    @classmethod
    def fit(cls, x: np.ndarray, y: np.ndarray, weight: np.ndarray, logs: list[str], c: float = 0.01,
            folds: int = FOLDS) -> RiskGate:
        """x/y/weight: one row per example; logs: the source log text of each row."""
        if len(set(y.tolist())) < 2:
            raise ValueError("the risk gate needs both risky and risk-free examples")
        fold = np.array([log_fold(t, folds) for t in logs])
        held = [_fit_linear(x[fold != f], y[fold != f], weight[fold != f], c) for f in range(folds)]
        return cls(_fit_linear(x, y, weight, c), held, {log_key(t) for t in set(logs)})

    def save(self, path: str | Path = GATE_FILE) -> None:
        models = [self.full, *self.folds]
        np.savez_compressed(path, mean=np.stack([m.mean for m in models]), scale=np.stack([m.scale for m in models]),
                            coef=np.stack([m.coef for m in models]), bias=np.array([m.bias for m in models]),
                            train_keys=np.array(sorted(self.train_keys)))

    @classmethod
    def load(cls, path: str | Path = GATE_FILE) -> RiskGate:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no risk gate at {path} (fit it with python -m training.safety.fit_gate)")
        d = np.load(path)
        models = [_Linear(d["mean"][i], d["scale"][i], d["coef"][i], float(d["bias"][i])) for i in range(len(d["bias"]))]
        return cls(models[0], models[1:], set(d["train_keys"].tolist()))
