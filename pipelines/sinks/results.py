"""Assembles the design's result schema from the per-second outputs of the parser.

A file's result holds everything. A camera runs for days, and its result is built in memory as it goes (about
250 bytes of JSON a second in `seconds` alone): a live source's result keeps its last `LIVE_SECONDS` seconds
and latencies and its newest `LIVE_ITEMS` of each list (events, transcript lines, alerts, moments, crossings,
zone events), and says in `dropped` how many of each it let go. The store keeps every row of a live stream.
"""

from __future__ import annotations

import time
from collections import deque

from pipelines.stages.record import Second

SCHEMA_VERSION = 1
LIVE_SECONDS = 3600  # a live source's result: its last hour of `seconds` (and latencies)
LIVE_ITEMS = 10_000  # and its newest this many of each list


class Kept(deque):
    """The newest `limit` items (None: all of them); `dropped` counts the ones let go."""

    def __init__(self, limit: int | None = None):
        super().__init__(maxlen=limit)
        self.dropped = 0

    def append(self, item) -> None:
        if self.maxlen is not None and len(self) == self.maxlen:
            self.dropped += 1
        super().append(item)

    def extend(self, items) -> None:
        for item in items:
            self.append(item)


class ResultBuilder:
    def __init__(self, source: str, live: bool = False):
        self.source = source
        items, seconds = (LIVE_ITEMS, LIVE_SECONDS) if live else (None, None)
        self.events, self.transcript, self.moments = Kept(items), Kept(items), Kept(items)
        self.answers, self.alerts = Kept(items), Kept(items)
        self.seconds = 0
        self.last_end = 0.0
        self.latencies = Kept(seconds)
        self.seconds_log = Kept(seconds)
        self.crossings, self.zone_events = Kept(items), Kept(items)
        self.tracks: list[dict] | None = None  # set by the final record when tracking ran
        self.tracks_dropped: dict[str, int] = {}  # the final record's tracks left out, by label (a live source)

    def add(self, record: Second) -> None:
        self.events.extend(record.events_closed)
        self.transcript.extend(record.transcript)
        self.alerts.extend(record.alerts)
        self.moments.extend(record.moments)
        self.answers.extend(record.answers)
        self.crossings.extend(record.crossings)
        self.zone_events.extend(record.zone_events)
        if record.tracks is not None:
            self.tracks = record.tracks
            self.tracks_dropped = dict(record.tracks_dropped)
        if record.index is not None:
            self.seconds_log.append(second_record(record))
            self.seconds += 1
            self.last_end = max(self.last_end, record.end)
            if record.emitted_wall:
                self.latencies.append(time.time() - record.emitted_wall)

    def build(self, duration_s: float | None, has_audio: bool, has_video: bool, wall_s: float,
              ingest: dict | None = None, extra: dict | None = None) -> dict:
        duration = round(duration_s if duration_s else self.last_end, 3)
        events = sorted(self.events, key=lambda e: (e["start"], e["end"], e["label"]))
        transcript = sorted(({"start": t["start"], "end": t["end"], "text": t["text"],
                              **({"words": t["words"]} if t.get("words") else {})} for t in self.transcript),
                            key=lambda t: t["start"])
        result = {
            "schema_version": SCHEMA_VERSION,
            "source": self.source,
            "duration_s": duration,
            "has_audio": has_audio,
            "has_video": has_video,
            "events": events,
            "transcript": transcript,
            "moments": list(self.moments),
            "alerts": sorted(self.alerts, key=lambda a: a["time"]),
            "seconds": sorted(self.seconds_log, key=lambda r: r["t"]),
            "timings": {"wall_s": round(wall_s, 3),
                        "realtime_factor": round(duration / wall_s, 3) if wall_s > 0 else None},
        }
        if self.answers:  # only when queries were asked: `foresight analyze` without --query is unchanged
            result["answers"] = list(self.answers)
        if self.tracks is not None:  # only with tracking: results without it are unchanged
            result["tracks"] = self.tracks
            result["crossings"] = sorted(self.crossings, key=lambda c: c["time"])
            result["zone_events"] = sorted(self.zone_events, key=lambda z: z["time"])
        dropped = {name: kept.dropped for name, kept in (
            ("seconds", self.seconds_log), ("events", self.events), ("transcript", self.transcript),
            ("moments", self.moments), ("answers", self.answers), ("alerts", self.alerts),
            ("crossings", self.crossings), ("zone_events", self.zone_events)) if kept.dropped}
        if self.tracks_dropped:
            dropped["tracks"] = self.tracks_dropped
        if dropped:  # only on a live source that ran long enough: every other result is unchanged
            result["dropped"] = dropped
        if ingest is not None:
            result["ingest"] = ingest
        if extra:
            result.update(extra)
        return result


def second_record(second: Second) -> dict:
    """What was seen and heard in one second, compactly, for the result's `seconds` list and the dashboard."""
    vis = second.visual or {}
    record = {"t": second.start, "speech": round(float(second.speech_prob), 2),
              "audio_tags": dict(list((second.tags or {}).items())[:3])}
    if second.anticipation:
        record["anticipation"] = second.anticipation
    if vis:
        record.update({"persons": vis.get("persons", 0), "objects": vis.get("objects", {}),
                       "faces": vis.get("faces", 0), "motion": vis.get("motion"),
                       "postures": [p.get("posture") for p in vis.get("pose", [])],
                       "camera_trouble": vis.get("camera_trouble")})
    if second.tracked:  # the ids of the tracks seen, per label, beside the per-frame counts in `objects`
        ids: dict[str, list[int]] = {}
        for t in second.tracked:
            ids.setdefault(t["label"], []).append(t["id"])
        record["track_ids"] = ids
    if second.text:
        record["text"] = [dict(r) for r in second.text]
    return record


def stable_view(result: dict) -> dict:
    """The result without run-dependent fields (timings, ingest counters), for comparing two runs."""
    return {k: v for k, v in result.items() if k not in ("timings", "ingest")}
