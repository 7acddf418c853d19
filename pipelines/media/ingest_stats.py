"""What a live reader reports and how it reconnects: its health, its statistics (frames, drops, lost seconds,
errors) and the backoff policy. Kept apart from the reader (`ingest.py`) so each reads top to bottom."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from enum import StrEnum

from pipelines.media.redact import redact


class Health(StrEnum):
    CONNECTING = "connecting"
    LIVE = "live"
    RECONNECTING = "reconnecting"
    FAILED = "failed"
    ENDED = "ended"


@dataclass
class ReconnectPolicy:
    """Exponential backoff with jitter (capped at `max_s`), for live sources once they have delivered data: an
    outage longer than `outage_budget_s` ends the stream (`math.inf`: never, as `serve` and the dashboard do).
    Before the first data a failure ends it at once, unless `retry_before_data` (`--retry`, a camera expected to
    come up late): then the same backoff and budget apply from the first attempt."""

    initial_s: float = 0.5
    max_s: float = 8.0
    factor: float = 2.0
    jitter: float = 0.3
    outage_budget_s: float = 30.0
    retry_before_data: bool = False

    def delay(self, attempt: int, rng: random.Random) -> float:
        base = min(self.max_s, self.initial_s * self.factor ** min(attempt, 64))  # no float overflow when forever
        return base * (1.0 + self.jitter * (2 * rng.random() - 1))


@dataclass
class IngestStats:
    health: Health = Health.CONNECTING
    frames_decoded: int = 0
    frames_skipped: int = 0  # video frames read, not decoded: no stage reads pictures, or unsampled non-references
    segments_emitted: int = 0
    segments_dropped: int = 0
    frames_dropped: int = 0
    reconnects: int = 0
    lost_intervals: list[tuple[float, float]] = field(default_factory=list)
    decode_errors: int = 0
    clock_jumps: int = 0  # times a stream's clock went back or leapt (joined TS, HLS discontinuities) and was continued
    analysed_until: float = 0.0  # end of the last second emitted (less than the duration if decoding stopped early)
    last_error: str | None = None
    outage_since: float | None = None  # during an outage: the wall-clock time (epoch s) its last data arrived
    failure: str | None = None
    warnings: list[str] = field(default_factory=list)
    recording: dict | None = None  # a recorded live source: its folder, segments written, write errors
    degradation: dict | None = None  # under a latency budget: the current level and seconds per level (budget.py)

    @property
    def lost_seconds(self) -> float:
        return sum(b - a for a, b in self.lost_intervals)

    def to_dict(self) -> dict:
        return {
            "health": self.health.value, "frames_decoded": self.frames_decoded,
            "segments_emitted": self.segments_emitted, "segments_dropped": self.segments_dropped,
            "frames_dropped": self.frames_dropped, "reconnects": self.reconnects,
            "lost_intervals": [[round(a, 3), round(b, 3)] for a, b in self.lost_intervals],
            "lost_seconds": round(self.lost_seconds, 3), "decode_errors": self.decode_errors,
            "analysed_until": round(self.analysed_until, 3),
            "last_error": redact(self.last_error), "failure": redact(self.failure),
            "outage_since": None if self.outage_since is None else round(self.outage_since, 3),
            "warnings": [redact(w) for w in self.warnings],
            **({"frames_skipped": self.frames_skipped} if self.frames_skipped else {}),
            **({"clock_jumps": self.clock_jumps} if self.clock_jumps else {}),
            **({"recording": dict(self.recording)} if self.recording is not None else {}),
            **({"degradation": dict(self.degradation)} if self.degradation is not None else {}),
        }
