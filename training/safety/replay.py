"""Replay a PaSBench log segment by segment through a monitor and measure the warning's lead time.

The log's own clock (`[Time] 05:30 PM`) is the replay clock. Lead time is the time of the risky
segment minus the time of the first alert: positive when the monitor warned before the risky act was
logged, zero when it warned on it. A log ends before its incident, so every alert is still in time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

from models.safety.alerts import Alert
from models.safety.logparse import Segment
from models.safety.monitor import SafetyMonitor
from models.sentences import split_sentences


def risky_segment(segments: list[Segment], trigger: str) -> int:
    """Index of the segment that best matches the known risk-triggering behaviour (last if unknown)."""
    if not trigger.strip() or len(segments) == 1:
        return len(segments) - 1
    vec = TfidfVectorizer(sublinear_tf=True, stop_words="english").fit([s.text() for s in segments] + [trigger])
    sims = (vec.transform([s.text() for s in segments]) @ vec.transform([trigger]).T).toarray()[:, 0]
    return int(np.argmax(sims)) if sims.max() > 0 else len(segments) - 1


def evidence_sentence(segment: Segment, trigger: str) -> str | None:
    """The behaviour sentence of `segment` that best matches the known triggering behaviour, if any."""
    sentences = split_sentences(segment.behavior)
    if not trigger.strip() or not sentences:
        return None
    try:
        vec = TfidfVectorizer(sublinear_tf=True, stop_words="english").fit([*sentences, trigger])
    except ValueError:  # only stop words: nothing to match on
        return None
    sims = (vec.transform(sentences) @ vec.transform([trigger]).T).toarray()[:, 0]
    return sentences[int(np.argmax(sims))] if sims.max() > 0 else None


def segment_times(segments: list[Segment]) -> list[float]:
    """Seconds on the log's clock, made monotonic (a log may pass midnight or lack a time)."""
    out: list[float] = []
    for i, s in enumerate(segments):
        t = s.seconds()
        t = (out[-1] + 60.0 if out else 0.0) if t is None else t
        while out and t < out[-1]:
            t += 12 * 3600.0
        out.append(t if out or i else t)
    return out


@dataclass
class ReplayResult:
    alerts: list[Alert]
    risky_index: int
    risky_time: float
    first_alert_time: float | None

    @property
    def lead_time_s(self) -> float | None:
        """Risky segment time minus first alert time (None when nothing was raised)."""
        return None if self.first_alert_time is None else self.risky_time - self.first_alert_time


def replay(monitor: SafetyMonitor, segments: list[Segment], trigger: str = "") -> ReplayResult:
    """Feed `segments` in order; alerts get their measured `lead_time_s`."""
    times = segment_times(segments)
    k = risky_segment(segments, trigger)
    alerts: list[Alert] = []
    for seg, t in zip(segments, times, strict=True):
        alerts += monitor.observe(seg, t)
    for a in alerts:
        a.lead_time_s = times[k] - a.time
    return ReplayResult(alerts, k, times[k], alerts[0].time if alerts else None)
