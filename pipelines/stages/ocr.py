"""Text on screen: a stage beside visual that reads the writing in each second's key frame (PP-OCRv4), and the
events a text that stays on screen becomes (`taxonomy: "ocr"`).

Reading costs about ten times the detector, so the stage reads only when it pays:

- only a CHANGED frame is read: the key frame's small grey copy (the one `FrameStats` measures motion on) is
  compared with the copy of the frame last read; when less than `ocr_change` of its pixels moved by more than a
  tenth of the grey range (a sign is a small part of the picture: a mean difference would miss it), the second
  carries the last reading;
- at most one reading every `ocr_every_s` seconds per stream; the seconds between carry the last reading;
- a budget: each second adds `ocr_budget_ms` of credit (at most `ocr_every_s` seconds' worth is kept) and a
  reading spends what it costs; a changed, due frame without credit is not read and carries nothing.

A reading's cost is modelled, not clocked: `ocr_read_ms` a frame plus `ocr_line_ms` a line read (what a reading
takes on one thread of our 2-core machine). A clocked budget read fewer frames on a loaded machine, so the same
clip gave other text events under load; the modelled one gives the same readings on any machine.
"""

from __future__ import annotations

import time

import numpy as np

from models.events import EventTracker
from pipelines.media.segment import Segment
from pipelines.stages.config import StageConfig
from pipelines.stages.events import labelled
from pipelines.stages.record import Second


def thumbnail(rgb: np.ndarray) -> np.ndarray:
    """The small grey copy of a frame that the visual stage's `FrameStats` measures change on (0-1 floats)."""
    import cv2

    from models.encoders.visual import VisualConfig

    side = VisualConfig.thumb_side
    h, w = rgb.shape[:2]
    small = cv2.resize(rgb, (side, max(2, int(round(h * side / w)))), interpolation=cv2.INTER_AREA)
    return cv2.cvtColor(small, cv2.COLOR_RGB2GRAY).astype(np.float32) / 255.0


def text_reader(side: int, min_score: float):
    """The process's one PP-OCRv4 reader for these settings (stateless, shared by streams)."""
    from models.encoders.text_reader import TextReader
    from models.shared import shared

    return shared(("ocr", side, min_score), lambda: TextReader(side, min_score))


class OcrStage:
    """Reads the text in each second's key frame, on changed frames only and within a budget (module docstring)."""

    def __init__(self, config: StageConfig):
        self.config = config
        on = config.ocr and config.visual
        self.reader = text_reader(config.ocr_side, config.ocr_min_score) if on else None
        self.spent = {"ocr_s": 0.0, "ocr_reads": 0.0}
        self.reset()

    def reset(self) -> None:
        """A new source: nothing read yet, a full budget."""
        self.last: list[dict] = []
        self.last_thumb: np.ndarray | None = None
        self.last_read: float | None = None
        self.credit_ms = self.config.ocr_budget_ms * self.config.ocr_every_s

    def timings(self) -> dict[str, float]:
        """Seconds spent reading so far (and how many readings)."""
        return dict(self.spent)

    def changed(self, thumb: np.ndarray) -> bool:
        last = self.last_thumb
        if last is None or last.shape != thumb.shape:
            return True
        return float((np.abs(thumb - last) > 0.1).mean()) >= self.config.ocr_change

    def process(self, seg: Segment) -> dict:
        """`{"index", "text": readings, "available", "read"}` (`read`: a fresh reading, not a carried one)."""
        if self.reader is None or not seg.frames:
            return {"index": seg.index, "text": [], "available": False, "read": False}
        c = self.config
        self.credit_ms = min(self.credit_ms + c.ocr_budget_ms, c.ocr_budget_ms * c.ocr_every_s)
        key = seg.frames[len(seg.frames) // 2]
        thumb = thumbnail(key)
        if not self.changed(thumb):
            return {"index": seg.index, "text": list(self.last), "available": True, "read": False}
        if self.last_read is not None and seg.start - self.last_read < c.ocr_every_s - 1e-6:
            return {"index": seg.index, "text": list(self.last), "available": True, "read": False}
        if self.credit_ms <= 0:  # changed, due, but over budget: what was read may be gone
            return {"index": seg.index, "text": [], "available": False, "read": False}
        t0 = time.perf_counter()
        self.last = self.reader.read(key)
        took = time.perf_counter() - t0
        self.credit_ms -= c.ocr_read_ms + c.ocr_line_ms * len(self.last)
        self.spent["ocr_s"] += took
        self.spent["ocr_reads"] += 1
        self.last_thumb, self.last_read = thumb, float(seg.start)
        return {"index": seg.index, "text": list(self.last), "available": True, "read": True}


def text_labels(readings: list[dict]) -> dict[tuple[str, str], float]:
    """(normalised text, "visual") -> best score of one second's readings."""
    from models.encoders.text_reader import normalise

    labels: dict[tuple[str, str], float] = {}
    for r in readings:
        key = (normalise(r["text"]), "visual")
        if key[0]:
            labels[key] = max(labels.get(key, 0.0), float(r["score"]))
    return labels


class TextEvents:
    """A text that stays on screen becomes an event (the project's `EventTracker`: same gap filling and shortest
    event rule as tag events), labelled with its normalised text, `source` and `taxonomy` "ocr"."""

    def __init__(self, config: StageConfig):
        self.tracker = EventTracker(max_gap=1, min_duration=config.ocr_min_s)

    def step(self, record: Second, ocr: dict | None) -> tuple[list[dict], list[dict]]:
        """(closed, active) after one second whose readings are `ocr["text"]`."""
        readings = (ocr or {}).get("text") or []
        closed = self.tracker.update(record.start, record.end, text_labels(readings))
        return [text_event(e) for e in closed], [text_event(e) for e in self.tracker.open.values()]

    def finish(self) -> list[dict]:
        return [text_event(e) for e in self.tracker.finish()]


def text_event(event) -> dict:
    return labelled(event.to_dict(), "ocr", "ocr")
