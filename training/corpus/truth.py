"""What a composed clip contains, and the per-second labels that follow from it.

- audio labels: second t ([t, t+1)) has a class when that class's audible extent (leading/trailing silence of
  the recording trimmed) overlaps it by at least `MIN_OVERLAP_S`;
- visual labels: the class of the picture on screen; visual Speech when a person picture is on screen during
  a second labelled audio Speech (LLP annotates a visible speaker as visual Speech).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from models.prefm.labels import LLP_CLASSES, LLP_INDEX

MIN_OVERLAP_S = 0.3


@dataclass
class AudioItem:
    """One placed sound: its audible extent in clip seconds, LLP class (None = distractor) and, for speech, text."""

    kind: str  # "speech" | "sound" | "distractor"
    name: str
    start: float
    end: float
    llp: str | None
    text: str = ""
    topic: str = ""
    voice: str = ""


@dataclass
class Shot:
    """A picture on screen over whole seconds [start, end)."""

    category: str
    image: str
    start: int
    end: int
    llp: str | None
    person: bool
    flip: bool = False


@dataclass
class ClipTruth:
    """Everything that was composed into one clip."""

    clip_id: str
    split: str
    duration: int
    fps: int
    audio: list[AudioItem] = field(default_factory=list)
    shots: list[Shot] = field(default_factory=list)
    queries: list[dict] = field(default_factory=list)

    script: str = ""  # "" for a v1 (random) clip, else one of SCRIPTS

    def to_dict(self) -> dict:
        d = asdict(self)
        if not self.script:  # v1 truth files stay byte-for-byte what they were
            del d["script"]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> ClipTruth:
        return cls(d["clip_id"], d["split"], int(d["duration"]), int(d["fps"]),
                   [AudioItem(**a) for a in d["audio"]], [Shot(**s) for s in d["shots"]], list(d["queries"]),
                   str(d.get("script", "")))


def second_labels(truth: ClipTruth) -> dict[str, np.ndarray]:
    """Per-second LLP multi-hot labels `(T, 25)` for "audio" and "visual" from the composition."""
    T = truth.duration
    audio = np.zeros((T, len(LLP_CLASSES)), np.float32)
    visual = np.zeros_like(audio)
    for it in truth.audio:
        if it.llp is None:
            continue
        for t in range(T):
            if min(it.end, t + 1) - max(it.start, t) >= MIN_OVERLAP_S:
                audio[t, LLP_INDEX[it.llp]] = 1.0
    for shot in truth.shots:
        for t in range(shot.start, min(shot.end, T)):
            if shot.llp is not None:
                visual[t, LLP_INDEX[shot.llp]] = 1.0
            if shot.person and audio[t, LLP_INDEX["Speech"]]:
                visual[t, LLP_INDEX["Speech"]] = 1.0
    return {"audio": audio, "visual": visual}
