"""Online event merging: per-second labels in, events with start, end and confidence out, no look-ahead.

A label seen in consecutive seconds (allowing `max_gap` missing seconds) is one event; an event is closed,
and only then final, once the label has been absent for more than `max_gap` seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Event:
    label: str
    modality: str
    start: float
    end: float
    confidences: list[float] = field(default_factory=list)
    source: str = ""

    @property
    def confidence(self) -> float:
        return sum(self.confidences) / len(self.confidences) if self.confidences else 0.0

    def to_dict(self) -> dict:
        return {"label": self.label, "modality": self.modality, "start": round(self.start, 2),
                "end": round(self.end, 2), "confidence": round(self.confidence, 3)}


def labelled(event: dict, source: str, taxonomy: str) -> dict:
    """`event` with the model that produced it, its label's taxonomy and the label as a person writes it."""
    from models.taxonomy import readable

    return {**event, "source": source, "taxonomy": taxonomy, "name": readable(event["label"], taxonomy)}


class EventTracker:
    def __init__(self, max_gap: int = 1, min_duration: float = 1.0):
        self.max_gap = max_gap
        self.min_duration = min_duration
        self.open: dict[tuple[str, str], Event] = {}
        self.closed: list[Event] = []

    def update(self, start: float, end: float, labels: dict[tuple[str, str], float]) -> list[Event]:
        """Add second [start, end) with its active (label, modality) -> confidence; returns events closed now."""
        for key, conf in labels.items():
            ev = self.open.get(key)
            if ev is not None and start - ev.end <= self.max_gap + 1e-6:
                ev.end = max(ev.end, end)
                ev.confidences.append(conf)
            else:
                if ev is not None:
                    self._close(key)
                self.open[key] = Event(key[0], key[1], start, end, [conf])
        done = []
        for key in [k for k, ev in self.open.items() if start - ev.end > self.max_gap - 1 + 1e-6 and k not in labels]:
            ev = self._close(key)
            if ev is not None:
                done.append(ev)
        return done

    def add_span(self, label: str, modality: str, start: float, end: float, confidence: float) -> Event:
        """Record an event whose extent is already known (e.g. a finished speech span)."""
        ev = Event(label, modality, start, end, [confidence])
        self.closed.append(ev)
        return ev

    def _close(self, key) -> Event | None:
        ev = self.open.pop(key)
        if ev.end - ev.start + 1e-6 < self.min_duration:
            return None
        self.closed.append(ev)
        return ev

    def finish(self) -> list[Event]:
        done = [ev for ev in (self._close(k) for k in list(self.open)) if ev is not None]
        return done

    def all_events(self) -> list[Event]:
        evs = self.closed + list(self.open.values())
        return sorted(evs, key=lambda e: (e.start, e.label))
