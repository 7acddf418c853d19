"""The online latency-budget controller for the live pipeline: the primal-dual learner on the pipeline CMDP.

Usage, once per second of stream (pipelines-independent; `pipelines/spine/budget.py` wires it into the live ingest):
    ctl = BudgetController(BudgetConfig(latency_budget_s=1.0))
    action = ctl.decide(index)            # before second `index` is analysed: Action(tier, fps)
    ctl.observe(index, latency_s, busy)   # once its result is out: measured latency, speech/people seen
`decide` uses the latest observed state; `observe` closes the transition of the second it names. Every
`horizon` observed seconds form an episode: the learner updates its model and plans the next window's mixture
of policies from the current state. Strict mode tightens the budget by a fraction of the Slater slack the
documented stage costs predict, so that once the model is learned the windows' mean latency stays in budget.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from models.cmdp.pipeline_model import (
    ACTIONS,
    Action,
    PipelineModelConfig,
    backlog_level,
    build_cmdp,
    quality,
    state_index,
)
from models.cmdp.primal_dual import PrimalDual, PrimalDualConfig
from models.cmdp.tabular import min_cost


@dataclass(frozen=True)
class BudgetConfig:
    latency_budget_s: float = 1.0  # mean latency per second over a window
    mode: str = "strict"
    max_fps: float = 2.0  # the decoder's sample rate: the controller can only thin frames below it
    seed: int = 0
    model: PipelineModelConfig = field(default_factory=PipelineModelConfig)
    learner: PrimalDualConfig | None = None

    def __post_init__(self) -> None:
        if self.latency_budget_s <= 0:
            raise ValueError("latency_budget_s must be positive")


def machine_contended(load: float | None = None) -> bool:
    """True when the 1-minute load average exceeds the machine's cores (or `load`, given per core, exceeds 1)."""
    if load is None:
        try:
            load = os.getloadavg()[0] / (os.cpu_count() or 1)
        except OSError:
            return False
    return load > 1.0


class BudgetController:
    """Chooses (tier, fps) each second under a latency budget, learning the pipeline's costs online."""

    def __init__(self, config: BudgetConfig | None = None):
        self.config = config = config or BudgetConfig()
        self.model = config.model
        self.actions = [a for a in ACTIONS if a.fps <= config.max_fps]
        allowed = [ACTIONS.index(a) for a in self.actions]
        nominal = build_cmdp(self.model, config.latency_budget_s)
        nominal.P, nominal.r, nominal.c = nominal.P[:, allowed], nominal.r[:, allowed], nominal.c[:, allowed]
        self.slack = max(0.0, nominal.budget - min_cost(nominal))
        self.learner = PrimalDual(self.model.n_states, len(self.actions), self.model.horizon, nominal.budget,
                                  config.learner or PrimalDualConfig(mode=config.mode), self.slack)
        self.rng = np.random.default_rng(config.seed)
        self.state = state_index(self.model, 0, False, False)
        self.policy: np.ndarray | None = None
        self.step = 0
        self.pending: dict[int, tuple[int, int]] = {}  # index -> (state, action) decided
        self.window: list[tuple[int, int, float, float, int]] = []
        self.history: deque[dict] = deque(maxlen=3600)  # the last hour of decisions, for inspection

    def decide(self, index: int, floor: int = 0) -> Action:
        """The action for second `index`; `floor` (an index into `actions`, mildest first) is the mildest one
        allowed, set by the caller after dropped seconds. What is applied is what the learner is told."""
        if self.policy is None or self.step >= self.model.horizon:
            start = np.zeros(self.model.n_states)
            start[self.state] = 1.0
            policies = self.learner.plan(start)
            self.policy, self.step = policies[self.rng.integers(len(policies))], 0
        a = max(int(self.policy[self.step, self.state]), min(floor, len(self.actions) - 1))
        self.step += 1
        self.pending[index] = (self.state, a)
        return self.actions[a]

    def observe(self, index: int, latency_s: float, busy: bool, load: float | None = None) -> None:
        """The measured outcome of second `index` (latency from its segment's end to its result)."""
        level = backlog_level(self.model, max(0.0, latency_s - 1.0))
        self.state = state_index(self.model, level, bool(busy), machine_contended(load))
        decided = self.pending.pop(index, None)
        if decided is None:
            return
        s, a = decided
        busy_then = bool((s // 2) % 2)
        cost = min(1.0, latency_s / self.model.latency_cap_s)
        self.window.append((s, a, quality(self.model, self.actions[a], busy_then), cost, self.state))
        self.history.append({"index": index, "tier": self.actions[a].tier, "fps": self.actions[a].fps,
                             "latency_s": round(latency_s, 3), "lambda": round(self.learner.lam, 3)})
        if len(self.window) >= self.model.horizon:
            self.learner.observe(self.window)
            self.window = []
