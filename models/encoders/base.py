"""The common shape of every encoder's output for one second, and the interface every encoder offers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np


@dataclass
class SecondFeatures:
    """Feature vectors of second `index` (starting at `start` s) and, for the embedded stack, readable detections.

    A modality missing in this second (no audio track, no frames) has a zero vector and `*_available` False.
    """

    index: int
    start: float
    audio: np.ndarray
    visual: np.ndarray
    audio_available: bool
    visual_available: bool
    speech: np.ndarray | None = None
    speech_available: bool = False
    detections: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The readable part (builtins only), for the result JSON and the live feed."""
        return {"index": self.index, "start": self.start, "audio_available": self.audio_available,
                "visual_available": self.visual_available, "speech_available": self.speech_available,
                **self.detections}


class Encoder(Protocol):
    """Per-second encoder. `version` changes whenever the vectors it produces would change."""

    name: str
    version: str
    audio_dim: int
    visual_dim: int

    def reset(self) -> None:
        """Forget cross-second state (a new source)."""

    def encode_audio(self, audio_1s: np.ndarray | None) -> np.ndarray:
        """`[audio_dim]` float32 for one second of 16 kHz mono audio; zeros when None."""

    def encode_visual(self, frames: list[np.ndarray], times: list[float] | None = None) -> np.ndarray:
        """`[visual_dim]` float32 for one second of sampled RGB frames; zeros when there are none."""

    def encode_second(self, frames: list[np.ndarray], frame_times: list[float] | None, audio: np.ndarray | None,
                      start: float, index: int = 0) -> SecondFeatures:
        """Both modalities of one second, with availability flags (and detections where the encoder has them)."""


def public_fields(result: dict | None) -> dict | None:
    """A per-second analysis without its internal arrays (keys starting with `_`): builtins only, for JSON."""
    if result is None:
        return None
    return {k: v for k, v in result.items() if not k.startswith("_")}


def encode_segment(encoder: Encoder, segment) -> SecondFeatures:
    """Encode a `pipelines.media.segment.Segment` (anything with frames, frame_times, audio, start, index)."""
    return encoder.encode_second(list(segment.frames), list(segment.frame_times) or None, segment.audio,
                                 float(segment.start), int(segment.index))
