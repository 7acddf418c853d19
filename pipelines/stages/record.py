"""The per-second record that flows down the stage graph: the parser fills what the second holds (text on
screen included), grounding
adds standing-query moments, safety adds alerts, and the sinks read it. One record per second, plus a final
record (`index` None) that carries what closes at the end of the stream."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Second:
    index: int | None = None  # None: the end-of-stream record
    start: float = 0.0
    end: float | None = None
    emitted_wall: float = 0.0  # when the segment was complete (wall clock), for latency accounting
    n_frames: int = 0
    final: bool = False
    speech_prob: float = 0.0
    speaking_since: float | None = None  # the parser, from speech: when the utterance still being heard began
    tags: dict[str, float] = field(default_factory=dict)  # AudioSet tags shown for this second
    level_db: float | None = None
    visual: dict | None = None  # readable detections: persons, objects, faces, pose, motion, camera trouble
    picture: bytes | None = None  # the parser, from visual with `keep_picture`: the JPEG `visual`'s boxes are on
    text: list[dict] = field(default_factory=list)  # the parser, from ocr: text on screen {"text", "box", "score"}
    events_closed: list[dict] = field(default_factory=list)  # events that ended (final rows)
    events_active: list[dict] = field(default_factory=list)  # events still open at this second
    anticipation: dict[str, float] = field(default_factory=dict)  # PreFM's likely labels over the next seconds
    transcript: list[dict] = field(default_factory=list)
    moments: list[dict] = field(default_factory=list)
    answers: list[dict] = field(default_factory=list)  # one-off queries' verdicts (found or "not found", best score)
    alerts: list[dict] = field(default_factory=list)
    tracked: list[dict] = field(default_factory=list)  # tracking: the tracks seen this second (id, label, box)
    crossings: list[dict] = field(default_factory=list)  # tracking: line crossings this second
    zone_events: list[dict] = field(default_factory=list)  # tracking: zone_enter / zone_exit / loiter
    tracks: list[dict] | None = None  # tracking, final record: every track with its path (None: not tracking)
    tracks_dropped: dict[str, int] = field(default_factory=dict)  # tracking, final record: tracks left out, by label

    @classmethod
    def of(cls, segment) -> Second:
        """The empty record of one `Segment` (its place on the clock, not its frames or audio)."""
        return cls(index=segment.index, start=segment.start, end=segment.end, emitted_wall=segment.emitted_wall,
                   n_frames=len(segment.frames))

    @classmethod
    def closing(cls) -> Second:
        """The end-of-stream record."""
        return cls(index=None, final=True)
