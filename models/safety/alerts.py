"""The alert a monitor raises, in the result schema's shape."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Alert:
    """One warning. `tier` ("rules", "retrieval", "judge") and `score` are kept out of `to_dict`.

    lead_time_s: seconds by which the alert precedes the harm. Live, the harm has not happened and
    the monitor writes 0.0; replaying a log whose risky moment is known fills in the measured value.
    """

    time: float
    severity: str
    rule: str
    reason: str
    lead_time_s: float = 0.0
    evidence: list[str] = field(default_factory=list)
    tier: str = "rules"
    score: float = 1.0

    def to_dict(self) -> dict:
        """Exactly the design's alert schema."""
        return {"time": float(self.time), "severity": self.severity, "rule": self.rule,
                "reason": self.reason, "lead_time_s": float(self.lead_time_s),
                "evidence": list(self.evidence)}
