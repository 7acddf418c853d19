"""Escalation policy for the safety monitor: watch, warn or alarm from the stream of risk-gate probabilities.

Off by default (`SafetyConfig.escalation=None`: one threshold on the gate decides). With it on, each
closed segment's gate probability is an observation of a hidden state (safe / risky) whose sensor
model is uncertain: the policy keeps a belief over (state, sensor model) and acts as a robust
multi-environment POMDP policy says. The policy file (`data/escalation_policy.json`) is computed by
`python -m training.methods.pomdp.escalation` from the gate's measured score histograms (see
`training/methods/pomdp/`); this module only tracks the belief and looks the action up, with numpy.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models.safety.knowledge import PACKAGE_DATA

ESCALATION_FILE = PACKAGE_DATA / "escalation_policy.json"
LEVELS = ("watch", "warn", "alarm")


@dataclass
class EscalationPolicy:
    """Belief tracking over (state, sensor model) and the robust policy's alpha-vectors.

    edges: bin edges of the gate probability [Z+1]; transition [A, S, S] and observation [S, Z] on the
    product space; alphas [K, S] with their levels (indices into LEVELS) [K]; prior [S].
    """

    edges: np.ndarray
    transition: np.ndarray
    observation: np.ndarray
    alphas: np.ndarray
    levels: np.ndarray
    prior: np.ndarray

    def __post_init__(self) -> None:
        s = self.prior.size
        if (self.transition.shape[1:] != (s, s) or self.transition.shape[0] != len(LEVELS)
                or self.observation.shape != (s, len(self.edges) - 1) or self.alphas.shape[1] != s):
            raise ValueError("escalation policy arrays do not fit together")
        self.reset()

    def reset(self) -> None:
        """Start of a stream: the prior belief, nothing done yet."""
        self.belief = self.prior.copy()
        self.level = 0
        self._before = (self.belief, self.level)

    def _bin(self, probability: float) -> int:
        return int(np.clip(np.searchsorted(self.edges, probability, side="right") - 1, 0, len(self.edges) - 2))

    def _next(self, belief: np.ndarray, level: int, probability: float) -> tuple[np.ndarray, int]:
        b = (belief @ self.transition[level]) * self.observation[:, self._bin(probability)]
        b = b / b.sum() if b.sum() > 0 else self.prior.copy()
        return b, int(self.levels[np.argmax(self.alphas @ b)])

    def step(self, probability: float) -> str:
        """The newest segment's gate probability -> "watch", "warn" or "alarm" (and the belief moves on)."""
        self._before = (self.belief, self.level)
        self.belief, self.level = self._next(self.belief, self.level, probability)
        return LEVELS[self.level]

    def would(self, probability: float) -> str:
        """What the last `step` would have said had it seen `probability` instead (belief unchanged)."""
        return LEVELS[self._next(*self._before, probability)[1]]

    def risk(self) -> float:
        """Current belief that the scene is risky (summed over sensor models)."""
        return float(self.belief.reshape(-1, 2)[:, 1].sum())

    @classmethod
    def load(cls, path: str | Path = ESCALATION_FILE) -> EscalationPolicy:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no escalation policy at {path} (write it with python -m training.methods.pomdp.escalation)")
        d = json.loads(path.read_text())
        if tuple(d["levels"]) != LEVELS:
            raise ValueError(f"{path}: levels must be {LEVELS}")
        return cls(np.asarray(d["edges"], float), np.asarray(d["transition"], float), np.asarray(d["observation"], float),
                   np.asarray(d["alphas"], float), np.asarray(d["actions"], int), np.asarray(d["prior"], float))


def alert_severity(rule_severity: str, level: str) -> str:
    """An alarm is critical; a warning keeps the rule's severity but is never critical."""
    if level == "alarm":
        return "critical"
    return "warning" if rule_severity == "critical" else rule_severity
