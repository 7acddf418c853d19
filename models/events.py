"""Online event merging: per-second labels in, events with start, end and confidence out, no look-ahead.

A label seen in consecutive seconds (allowing `max_gap` missing seconds) is one event; an event is closed,
and only then final, once the label has been absent for more than `max_gap` seconds, and it is kept only if
it lasted at least `min_duration` seconds. This is the project's one event merger: the tag events
(`pipelines/stages/parser.py`), PreFM's events (`models/prefm/online.py:EventMerger` binarizes, this merges)
and the training tools' replays all run it.
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


class EventTracker:
    """Per-second labels (`update`) and spans whose extent a source already knows (`add_span`, e.g. the VAD's
    speech spans) merged into events by one rule: a gap of at most `max_gap` seconds is bridged; an event
    shorter than `min_duration` is dropped (spans are exempt: their source has its own shortest rule)."""

    def __init__(self, max_gap: int = 1, min_duration: float = 1.0):
        self.max_gap = max_gap
        self.min_duration = min_duration
        self.open: dict[tuple[str, str], Event] = {}
        self.closed: list[Event] = []
        self._spans: set[tuple[str, str]] = set()  # keys fed by add_span

    def update(self, start: float, end: float, labels: dict[tuple[str, str], float],
               pending: dict[tuple[str, str], float] | None = None) -> list[Event]:
        """Add second [start, end) with its active (label, modality) -> confidence; returns events closed now.

        `pending`: key -> start of a span of that key still in progress (not yet given to `add_span`); an open
        event of that key stays open while that span could continue it (it began within `max_gap`)."""
        done = []
        for key, conf in labels.items():
            ev = self.open.get(key)
            if ev is not None and start - ev.end <= self.max_gap + 1e-6:
                ev.end = max(ev.end, end)
                ev.confidences.append(conf)
            else:
                if ev is not None:
                    done += self._closed(key)
                self.open[key] = Event(key[0], key[1], start, end, [conf])
        pending = pending or {}

        def continued(key, ev: Event) -> bool:
            return key in pending and pending[key] - ev.end <= self.max_gap + 1e-6

        for key in [k for k, ev in self.open.items()
                    if start - ev.end > self.max_gap - 1 + 1e-6 and k not in labels and not continued(k, ev)]:
            done += self._closed(key)
        return done

    def add_span(self, label: str, modality: str, start: float, end: float, confidence: float) -> list[Event]:
        """Add an extent already known (e.g. a finished speech span): it continues the open event of its key
        when it starts within `max_gap` of its end, else opens one; returns the event this closed, if any."""
        key = (label, modality)
        self._spans.add(key)
        ev = self.open.get(key)
        if ev is not None and start - ev.end <= self.max_gap + 1e-6:
            ev.start, ev.end = min(ev.start, start), max(ev.end, end)
            ev.confidences.append(confidence)
            return []
        done = self._closed(key) if ev is not None else []
        self.open[key] = Event(label, modality, start, end, [confidence])
        return done

    def _closed(self, key) -> list[Event]:
        ev = self._close(key)
        return [ev] if ev is not None else []

    def _close(self, key) -> Event | None:
        ev = self.open.pop(key)
        if key not in self._spans and ev.end - ev.start + 1e-6 < self.min_duration:
            return None
        self.closed.append(ev)
        return ev

    def finish(self) -> list[Event]:
        done = [ev for ev in (self._close(k) for k in list(self.open)) if ev is not None]
        return done

    def all_events(self) -> list[Event]:
        evs = self.closed + list(self.open.values())
        return sorted(evs, key=lambda e: (e.start, e.label))
