"""The unit that flows through the pipeline: one aligned second of sampled frames and audio."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Segment:
    """Second `index` of a source, covering [start, end) on the source clock.

    `frames` are the sampled RGB frames (H x W x 3 uint8) with their `frame_times`; `audio` is 16 kHz mono
    float32 of length (end - start) * 16000, or None when the source has no audio.
    `emitted_wall` is the wall-clock time the segment was complete, for latency accounting.
    `frames_not_decoded` counts the sampling instants whose frame was left undecoded (no stage reads pictures).
    """

    source_id: str
    index: int
    start: float
    end: float
    frames: list[np.ndarray] = field(default_factory=list)
    frame_times: list[float] = field(default_factory=list)
    audio: np.ndarray | None = None
    emitted_wall: float = 0.0
    dropped_before: int = 0
    final: bool = False
    frames_not_decoded: int = 0

    @property
    def duration(self) -> float:
        return self.end - self.start

    def meta(self) -> dict:
        """What the parser and sink need to know about this second, without its frames and audio."""
        return {"index": self.index, "start": self.start, "end": self.end, "emitted_wall": self.emitted_wall,
                "n_frames": len(self.frames)}
