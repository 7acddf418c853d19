"""Recordings of live streams, shared by the REST API and the dashboard: where each stream's ring of segments
lives (`recordings/<job id>/` next to the store, so a server and a dashboard on one `--db` see each other's),
how much is kept, the clip of a job's recording between two stream times, and the recording's span by the
clock (`recorded_span`: stream time <-> wall-clock time, and what the retention deleted)."""

from __future__ import annotations

import argparse
import bisect
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from app.validate import nonnegative_float, positive_float
from models.errors import BadInput

if TYPE_CHECKING:  # (imported where used: settings import this module, and must stay light)
    from pipelines.media.clips import Clip
    from pipelines.media.recorder import RecordConfig
    from pipelines.sinks.store import Store

JOB_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass
class Retention:
    """How much of each live stream is kept: the newest `minutes` and at most `gb` gigabytes (whichever is
    less) of its recording; finished streams' recordings stay for playback until all of them together pass
    `gb`, oldest removed first. `minutes == 0` turns recording off. What the streams wrote in the store (rows,
    review cards, finished jobs) is kept `keep_days` (0: for ever; `app.services.row_retention`)."""

    minutes: float = 60.0
    gb: float = 2.0
    segment_s: float = 4.0
    keep_days: float = 30.0

    def __post_init__(self) -> None:
        if not (self.minutes >= 0 and self.gb > 0 and self.segment_s > 0 and 0 <= self.keep_days < math.inf):
            raise ValueError("recording minutes and days kept must be 0 or more, and gigabytes positive")

    @property
    def enabled(self) -> bool:
        return self.minutes > 0


def recordings_root(db_path: str | Path) -> Path:
    """The recordings' folder of the store at `db_path`."""
    return Path(db_path).resolve().parent / "recordings"


def recording_dir(root: Path, job_id: str) -> Path | None:
    """Job `job_id`'s recording folder under `root`, or None for an id that could name anything else."""
    if not JOB_ID.fullmatch(job_id):
        return None
    folder = (root / job_id).resolve()
    return folder if folder.parent == root.resolve() else None


def record_config(root: Path, job_id: str, retention: Retention, running: set[str]) -> RecordConfig | None:
    """The ring for a new stream's job, after old recordings over the size limit are deleted (never those in
    `running`); None when recording is off."""
    from pipelines.media.recorder import RecordConfig, prune_recordings

    folder = recording_dir(root, job_id)
    if not retention.enabled or folder is None:
        return None
    prune_recordings(root, retention.gb, keep=running | {job_id})
    return RecordConfig(str(folder), segment_s=retention.segment_s, keep_minutes=retention.minutes,
                        keep_gb=retention.gb)


def clip_for_job(store: Store, root: Path, job_id: str, start: float, end: float) -> Clip:
    """The recording of job `job_id` between stream times `start` and `end` (an MP4, from the keyframe at or before
    `start`). NotRecorded (LookupError) for an unknown job or a range not recorded; ValueError for a bad range."""
    from pipelines.media.clips import NotRecorded, cut_clip
    from pipelines.media.recorder import list_segments

    folder = recording_dir(root, job_id)
    if folder is None or store.job(job_id) is None:
        raise NotRecorded("no such job")
    if not list_segments(folder):
        raise NotRecorded("this job has no recording (only live streams are recorded)")
    return cut_clip(folder, start, end)


@dataclass
class RecordedSpan:
    """What a job's recording holds, in stream time (`start`-`end`) and by the clock: `anchors` are (stream time,
    wall-clock epoch s) pairs, one per kept segment from the recorder's log, or the job's creation time at stream
    time 0 when there is no log (`approximate`: the stream starts a little after its job). `deleted` segments
    spanning stream times `deleted_span` were removed by the retention."""

    start: float
    end: float
    anchors: list[tuple[float, float]] = field(default_factory=list)
    approximate: bool = False
    deleted: int = 0
    deleted_span: tuple[float, float] | None = None

    def wall(self, t: float) -> float:
        """The wall-clock time (epoch s) of stream time `t`, from the nearest segment start at or before it."""
        i = max(0, bisect.bisect_right([a[0] for a in self.anchors], t) - 1)
        t0, w0 = self.anchors[i]
        return w0 + (t - t0)

    def stream(self, wall: float) -> float:
        """The stream time of wall-clock time `wall`, within the recorded span."""
        i = max(0, bisect.bisect_right([a[1] for a in self.anchors], wall) - 1)
        t0, w0 = self.anchors[i]
        return min(max(t0 + (wall - w0), self.start), self.end)


def recorded_span(store: Store, root: Path, job_id: str) -> RecordedSpan | None:
    """Job `job_id`'s recording by the clock, or None when it has none (not live, or all of it deleted)."""
    from pipelines.media.clips import recorded_range
    from pipelines.media.recorder import read_log, segment_start

    folder = recording_dir(root, job_id)
    job = store.job(job_id) if folder is not None else None
    span = recorded_range(folder) if job is not None else None
    if span is None:
        return None
    log = read_log(folder)
    anchors = sorted((segment_start(Path(name)), float(w)) for name, w in log["wall"].items()
                     if Path(name).stem.isdigit())
    gone = log["deleted"]
    deleted_span = (float(gone["first"]), float(gone["last"])) if gone["count"] and gone["first"] is not None else None
    return RecordedSpan(span[0], span[1], anchors or [(0.0, float(job["created_at"]))], approximate=not anchors,
                        deleted=gone["count"], deleted_span=deleted_span)


def add_recording_flags(p: argparse.ArgumentParser) -> None:
    """How much of each live stream is recorded for playback (serve and dashboard)."""
    p.add_argument("--record-minutes", type=nonnegative_float, default=60.0,
                   help="keep the newest MINUTES of each live stream on disk for playback (default 60; 0: no recording)")
    p.add_argument("--record-gb", type=positive_float, default=2.0,
                   help="and at most this many GB per stream, and for all finished streams' recordings (default 2)")
    p.add_argument("--keep-days", type=nonnegative_float, default=30.0,
                   help="delete what live streams wrote in the store (events, transcript, alerts, moments, review "
                        "cards, finished stream jobs) after this many days (default 30; 0: keep everything)")


def retention_from(args) -> Retention:
    """The recording retention from `add_recording_flags`' flags; BadInput for values out of range."""
    minutes, gb = getattr(args, "record_minutes", 60.0), getattr(args, "record_gb", 2.0)
    days = getattr(args, "keep_days", 30.0)
    if not (0 <= minutes < math.inf and 0 < gb < math.inf and 0 <= days < math.inf):
        raise BadInput("--record-minutes and --keep-days must be 0 or more and --record-gb positive")
    return Retention(minutes=minutes, gb=gb, keep_days=days)
