"""The safety monitor: one interface over the three tiers, with cooldown, dedup and rate limiting.

`update(SecondSignals)` is the live entry point: fast rules run every second; every closed log
segment also runs rule retrieval over the rolling log (and the judge when configured). `observe(Segment)`
feeds a ready-made log segment instead (replaying PaSBench logs).

Two separate decisions: the risk gate (`risk_gate.py`) says whether the newest segment shows a risky
act at all, retrieval says which rule it breaks. `threshold` is the gate probability needed to warn
(or, without embeddings, the retrieval score): higher means fewer false alarms and fewer caught risks
(see docs/safety.md). Live logs must be risky without their speech: words alone ("the phone is
ringing") never raise a retrieval alert unless what was seen or heard points to the same rule.
With `escalation` set, a robust POMDP policy (`escalation.py`) reads the stream of gate probabilities
instead of the threshold and says watch (no alert), warn or alarm (a critical alert).
"""

from __future__ import annotations

import logging
import os
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from models.safety.alerts import Alert
from models.safety.escalation import ESCALATION_FILE, EscalationPolicy, alert_severity
from models.safety.fast_rules import FastRuleConfig, FastRules
from models.safety.judge import ChatJudge, JudgeError
from models.safety.knowledge import SEVERITIES, load_rules
from models.safety.logparse import Segment
from models.safety.obslog import NO_PERSON, ObservationLog, is_presence
from models.safety.retrieval import Candidate, RuleRetriever
from models.safety.risk_gate import GATE_FILE, RiskGate
from models.safety.signals import SecondSignals

log = logging.getLogger(__name__)
GATE_THRESHOLD = 0.7   # risk-gate probability (default, embeddings on)
SCORE_THRESHOLD = 0.2  # retrieval score (TF-IDF only: no gate)
DEFAULT_THRESHOLD = GATE_THRESHOLD


@dataclass
class SafetyConfig:
    """Everything a user may tune. `threshold` trades precision (high) for recall (low)."""

    threshold: float | None = None        # gate probability (score without gate) needed; None = default
    use_embeddings: bool = True           # MiniLM similarity on top of TF-IDF
    use_gate: bool = True                 # risk gate (needs embeddings); off = warn on retrieval score
    gate_file: str | None = None          # another fitted gate (default data/risk_gate.npz)
    recency_decay: float = 0.5            # weight of a segment k steps back: decay**k
    embed_weight: float = 0.7             # share of the embedding score vs TF-IDF
    top_k: int = 5                        # candidates shown to the judge
    segment_s: float = 10.0               # live seconds per log segment
    window_segments: int = 8              # log segments kept for reasoning
    cooldown_s: float = 60.0              # the same rule is not repeated within this time (escalations are)
    max_alerts_per_minute: int = 6        # non-critical alerts beyond this are dropped
    rules_file: str | None = None         # another knowledge base in rules_severity.json's format
    judge_url: str | None = None          # OpenAI-compatible endpoint; None = no judge
    judge_model: str = "default"
    judge_timeout_s: float = 10.0
    judge_api_key_env: str = "FORESIGHT_JUDGE_API_KEY"
    fast: FastRuleConfig = field(default_factory=FastRuleConfig)
    escalation: str | None = None         # None: warn at `threshold`; "robust" or a policy file: watch/warn/alarm

    def make_judge(self) -> ChatJudge | None:
        """The configured tier-(c) judge (API key from `judge_api_key_env`), or None when no URL is set."""
        if not self.judge_url:
            return None
        return ChatJudge(self.judge_url, self.judge_model, self.judge_timeout_s, os.environ.get(self.judge_api_key_env))

    def __post_init__(self) -> None:
        if self.threshold is None:
            self.threshold = GATE_THRESHOLD if self.use_embeddings and self.use_gate else SCORE_THRESHOLD
        if self.cooldown_s < 0 or self.max_alerts_per_minute < 1 or self.top_k < 1:
            raise ValueError("cooldown_s must be >= 0, max_alerts_per_minute >= 1 and top_k >= 1")


class SafetyMonitor:
    """Feed seconds (or log segments) in time order; get the alerts that pass cooldown and dedup."""

    def __init__(self, config: SafetyConfig | None = None, retriever: RuleRetriever | None = None,
                 gate: RiskGate | None = None):
        self.config = cfg = config or SafetyConfig()
        if retriever is None:
            embedder = None
            if cfg.use_embeddings:
                from models.sentences import shared_encoder

                embedder = shared_encoder()  # one model and cache in a process, whatever uses it
            retriever = RuleRetriever(load_rules(Path(cfg.rules_file) if cfg.rules_file else None), embedder,
                                      recency_decay=cfg.recency_decay, embed_weight=cfg.embed_weight,
                                      background=None if cfg.rules_file else Path(__file__).parent / "data" / "background.npz")
        self.retriever = retriever
        self.gate = None
        if cfg.use_gate and retriever.embedder is not None:
            self.gate = gate or RiskGate.load(cfg.gate_file or GATE_FILE)
        self.fast = FastRules(cfg.fast)
        self.log = ObservationLog(cfg.segment_s, cfg.window_segments)
        self.judge = cfg.make_judge()
        self.escalation = None
        if cfg.escalation:
            path = ESCALATION_FILE if cfg.escalation == "robust" else Path(cfg.escalation)
            self.escalation = EscalationPolicy.load(path)
            if self.gate is None:
                log.warning("the escalation policy is calibrated on risk-gate probabilities; the gate is off")
        self._last_by_rule: dict[str, tuple[float, int]] = {}  # time and severity rank of its last alert
        self._recent: deque[float] = deque()
        self._live = False  # True once fed live seconds: their logs need non-speech corroboration

    def update(self, signals: SecondSignals) -> list[Alert]:
        """One second of live signals -> alerts raised now."""
        self._live = True
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
    def _decide(self, texts: list[str]) -> tuple[float, list[Candidate]]:
        """Risk value (gate probability or retrieval score) and the top-k rules of a log."""
        if not any(t.strip() for t in texts):
            return 0.0, []
        a = self.retriever.analyse(texts)
        candidates = self.retriever.candidates(a, self.config.top_k)
        value = self.gate.probability(a) if self.gate is not None else candidates[0].score
        return value, candidates

    def _reason(self, time: float) -> list[Alert]:
        segments = list(self.log.segments)
        value, candidates = self._decide([s.text() for s in segments])
        level = self.escalation.step(value) if self.escalation is not None else None
        if not candidates or not self._acts(value, level):
            return []
        if self._live:
            # Live logs are written from perception and ASR. The rule must also win without the
            # words (speech may confirm a rule, never introduce one), and the evidence must be an act or
            # hazard, not just "1 person is present". It must come from the seconds just closed, with
            # someone seen in them: older segments weigh in the risk, but their evidence is never reused
            # (a posture seen a minute ago does not make a fresh alert about an empty room).
            newest = len(segments) - 1
            quiet_value, quiet = self._decide([s.text(with_speech=False) for s in segments])
            quiet_level = None if level is None else self.escalation.would(quiet_value)
            evidence = ({c.rule.id: c for c in quiet if c.segment == newest}
                        if self._acts(quiet_value, quiet_level) else {})
            actor = not segments[newest].behavior.startswith(NO_PERSON)
            top = evidence.get(candidates[0].rule.id)
            if not actor or top is None or is_presence(top.sentence):
                return []
            candidates = [evidence[c.rule.id] for c in candidates if c.rule.id in evidence]
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
        severity = chosen.rule.severity if level is None else alert_severity(chosen.rule.severity, level)
        return [Alert(time=time, severity=severity, rule=chosen.rule.knowledge,
                      reason=f'{reason} Triggered by: "{chosen.sentence}"', tier=tier, score=value,
                      evidence=[f"{seg.time} {seg.location}: {chosen.sentence}".strip()])]

    def _acts(self, value: float, level: str | None) -> bool:
        """Warn? By the threshold, or (escalation on) unless the policy says watch."""
        return value >= self.config.threshold if level is None else level != "watch"

    # --- cooldown, dedup, rate limit ---------------------------------------------------------------
    def _admit(self, alerts: list[Alert]) -> list[Alert]:
        out = []
        for a in alerts:
            last = self._last_by_rule.get(a.rule)
            rank = SEVERITIES[::-1].index(a.severity)  # an escalation (warning -> critical) passes the cooldown
            if last is not None and a.time - last[0] < self.config.cooldown_s and rank <= last[1]:
                continue
            while self._recent and a.time - self._recent[0] >= 60.0:
                self._recent.popleft()
            if a.severity != "critical" and len(self._recent) >= self.config.max_alerts_per_minute:
                continue
            self._last_by_rule[a.rule] = (a.time, rank)
            self._recent.append(a.time)
            out.append(a)
        return out
