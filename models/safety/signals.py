"""What the live pipeline knows about one second of one camera: the safety monitor's only live input."""

from __future__ import annotations

from dataclasses import dataclass, field

POSTURES = ("standing", "sitting", "lying", "unknown")
CAMERA_TROUBLE = ("dark", "blurred", "covered", "frozen")


@dataclass
class SecondSignals:
    """Observations for the second starting at `time`; every field except `time` may be left empty.

    time: seconds from the start of the source (the segment's start on the stream clock).
    camera: name of the camera or source; becomes the log's `[Location]`.
    audio_tags: AudioSet display name -> probability for this second, e.g.
        {"Smoke detector, smoke alarm": 0.9, "Glass": 0.4, "Screaming": 0.7, "Speech": 0.95}.
    speech_text: words transcribed in this second (ASR), "" when nobody spoke.
    events: result-schema events active at this second, dicts with "label", "modality"
        ("audio" | "visual" | "audio-visual") and "confidence".
    persons: number of people seen; None when unknown (no detector ran), 0 when none seen.
    objects: COCO class name -> count seen in this second, e.g. {"knife": 1, "oven": 1}; the
        pipeline may add "child" when it can tell children apart.
    pose: one dict per tracked person: "posture" (standing | sitting | lying | unknown),
        "vertical_velocity" (downward speed of the body centre in image heights per second,
        positive = falling) and "bbox" [x0, y0, x1, y1] in pixels or normalised units.
    camera_trouble: "dark", "blurred", "covered" or "frozen" when the view is unusable, else None.
    signs: text read on screen in this second (OCR), e.g. ["WET FLOOR"].
    still: tracked people (with tracking on): "track_id", "still_s" (seconds the box has stayed put) and
        "lying" (the box is wider than tall on the picture).
    """

    time: float
    camera: str = "camera"
    audio_tags: dict[str, float] = field(default_factory=dict)
    speech_text: str = ""
    events: list[dict] = field(default_factory=list)
    persons: int | None = None
    objects: dict[str, int] = field(default_factory=dict)
    pose: list[dict] = field(default_factory=list)
    camera_trouble: str | None = None
    signs: list[str] = field(default_factory=list)
    still: list[dict] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not isinstance(self.time, int | float) or self.time != self.time or self.time < 0:
            raise ValueError(f"time must be a non-negative number of seconds, got {self.time!r}")
        if self.camera_trouble is not None and self.camera_trouble not in CAMERA_TROUBLE:
            raise ValueError(f"camera_trouble must be one of {CAMERA_TROUBLE} or None, got {self.camera_trouble!r}")
        if self.persons is not None and self.persons < 0:
            raise ValueError(f"persons must be >= 0 or None, got {self.persons}")
        for p in self.pose:
            if p.get("posture", "unknown") not in POSTURES:
                raise ValueError(f"posture must be one of {POSTURES}, got {p.get('posture')!r}")

    def tag(self, *names: str) -> float:
        """Highest probability among the given audio tags and active event labels (0 if absent)."""
        best = max((self.audio_tags.get(n, 0.0) for n in names), default=0.0)
        for ev in self.events:
            if ev.get("label") in names:
                best = max(best, float(ev.get("confidence", 1.0)))
        return best

    def people(self) -> int:
        """People present: the detector's count, else the number of poses."""
        return self.persons if self.persons is not None else len(self.pose)
