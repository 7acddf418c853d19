"""The safety monitor: one interface over the three tiers, with cooldown, dedup and rate limiting.

`update(SecondSignals)` is the live entry point: fast rules run every second; every closed log
segment also runs rule retrieval over the rolling log (and the judge when configured). `observe(Segment)`
feeds a ready-made log segment instead (replaying PaSBench logs). `threshold` sets how sure retrieval
must be before it warns: higher means fewer false alarms and fewer caught risks (see docs/safety.md).
"""

from __future__ import annotations

import logging
import os
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from models.safety.alerts import Alert
from models.safety.fast_rules import FastRuleConfig, FastRules
from models.safety.judge import ChatJudge, JudgeError
from models.safety.knowledge import load_rules
from models.safety.logparse import Segment
from models.safety.obslog import ObservationLog
from models.safety.retrieval import RuleRetriever
from models.safety.signals import SecondSignals

log = logging.getLogger(__name__)
DEFAULT_THRESHOLD = 0.2


@dataclass
class SafetyConfig:
    """Everything a user may tune. `threshold` trades precision (high) for recall (low)."""

    threshold: float = DEFAULT_THRESHOLD  # retrieval score needed to warn
    use_embeddings: bool = True           # MiniLM similarity on top of TF-IDF
    recency_decay: float = 0.5            # weight of a segment k steps back: decay**k
    embed_weight: float = 0.7             # share of the embedding score vs TF-IDF
    top_k: int = 5                        # candidates shown to the judge
    segment_s: float = 10.0               # live seconds per log segment
    window_segments: int = 8              # log segments kept for reasoning
    cooldown_s: float = 60.0              # the same rule is not repeated within this time
    max_alerts_per_minute: int = 6        # non-critical alerts beyond this are dropped
    rules_file: str | None = None         # another knowledge base in rules_severity.json's format
    judge_url: str | None = None          # OpenAI-compatible endpoint; None = no judge
    judge_model: str = "default"
    judge_timeout_s: float = 10.0
    judge_api_key_env: str = "FORESIGHT_JUDGE_API_KEY"
    fast: FastRuleConfig = field(default_factory=FastRuleConfig)

    def __post_init__(self) -> None:
        if self.cooldown_s < 0 or self.max_alerts_per_minute < 1 or self.top_k < 1:
            raise ValueError("cooldown_s must be >= 0, max_alerts_per_minute >= 1 and top_k >= 1")


class SafetyMonitor:
    """Feed seconds (or log segments) in time order; get the alerts that pass cooldown and dedup."""

    def __init__(self, config: SafetyConfig | None = None, retriever: RuleRetriever | None = None):
        self.config = cfg = config or SafetyConfig()
        if retriever is None:
            embedder = None
            if cfg.use_embeddings:
                from models.safety.embed import SentenceEmbedder
                embedder = SentenceEmbedder()
            retriever = RuleRetriever(load_rules(Path(cfg.rules_file) if cfg.rules_file else None), embedder,
                                      recency_decay=cfg.recency_decay, embed_weight=cfg.embed_weight,
                                      background=None if cfg.rules_file else Path(__file__).parent / "data" / "background.npz")
        self.retriever = retriever
        self.fast = FastRules(cfg.fast)
        self.log = ObservationLog(cfg.segment_s, cfg.window_segments)
        self.judge = None
        if cfg.judge_url:
            self.judge = ChatJudge(cfg.judge_url, cfg.judge_model, cfg.judge_timeout_s,
                                   os.environ.get(cfg.judge_api_key_env))
        self._last_by_rule: dict[str, float] = {}
        self._recent: deque[float] = deque()

    def update(self, signals: SecondSignals) -> list[Alert]:
        """One second of live signals -> alerts raised now."""
        alerts = self.fast.update(signals)
        if self.log.add(signals) is not None:
            alerts += self._reason(signals.time)
        return self._admit(alerts)

    def observe(self, segment: Segment, time: float) -> list[Alert]:
        """One ready-made log segment arriving at `time` -> alerts raised now."""
        self.log.append(segment)
        return self._admit(self._reason(time))

    def flush(self, time: float) -> list[Alert]:
        """End of stream: close open segments and reason once more."""
        closed = [self.log.close(cam) for cam in self.log.open_cameras()]
        return self._admit(self._reason(time)) if any(closed) else []

    # --- tier (b) and (c) ----------------------------------------------------------------------
    def _reason(self, time: float) -> list[Alert]:
        segments = list(self.log.segments)
        candidates = self.retriever.rank([s.text() for s in segments], k=self.config.top_k)
        if not candidates or candidates[0].score < self.config.threshold:
            return []
        chosen, tier, why = candidates[0], "retrieval", ""
        if self.judge is not None:
            try:
                chosen, why = self.judge.verify(self.log.text(), candidates)
                tier = "judge"
            except JudgeError as exc:
                log.warning("safety judge unavailable, keeping retrieval's answer: %s", exc)
            if chosen is None:
                return []
        seg = segments[chosen.segment]
        reason = why or chosen.rule.reason
        return [Alert(time=time, severity=chosen.rule.severity, rule=chosen.rule.knowledge,
                      reason=f'{reason} Triggered by: "{chosen.sentence}"', tier=tier, score=chosen.score,
                      evidence=[f"{seg.time} {seg.location}: {chosen.sentence}".strip()])]

    # --- cooldown, dedup, rate limit ---------------------------------------------------------------
    def _admit(self, alerts: list[Alert]) -> list[Alert]:
        out = []
        for a in alerts:
            last = self._last_by_rule.get(a.rule)
            if last is not None and a.time - last < self.config.cooldown_s:
                continue
            while self._recent and a.time - self._recent[0] >= 60.0:
                self._recent.popleft()
            if a.severity != "critical" and len(self._recent) >= self.config.max_alerts_per_minute:
                continue
            self._last_by_rule[a.rule] = a.time
            self._recent.append(a.time)
            out.append(a)
        return out
