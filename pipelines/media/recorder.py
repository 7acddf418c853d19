"""Recording of a live source for playback: the packets the ingest already demuxes are written again, without
re-encoding, into a bounded ring of short MPEG-TS segments on disk (no second connection to the camera).

Segments start on a video keyframe (any packet for audio-only sources) once `segment_s` have passed, and are
named by the stream time of their first packet in milliseconds (`000000012000.ts`). Packet timestamps are
rewritten to the stream's own clock (the one events, alerts and moments use, continued across reconnects)
plus `OFFSET_S`, so a time on the timeline is found in the recording without any table. MPEG-TS is kept
because a segment still being written is readable up to its last packet: the newest seconds can be played.
After each new segment the oldest are deleted while the ring holds more than `keep_minutes` or `keep_gb`.
A recording failure never stops the analysis; it is counted and the next keyframe starts a new segment.

Next to the segments, `recording.json` (`read_log`) keeps the wall-clock time each kept segment was started at
(so the recording can be shown by the clock, across outages), and how many segments the retention deleted and
which stream times they spanned (so the dashboard can say what is gone, not just show less).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av

OFFSET_S = 10.0  # recorded timestamps are stream time + this, so no DTS is negative at a stream's start
TIME_BASE = Fraction(1, 90_000)
SUFFIX = ".ts"
LOG_NAME = "recording.json"
log = logging.getLogger("foresight.recorder")


@dataclass
class RecordConfig:
    """Where a live source is recorded and how much of it is kept (the newest `keep_minutes` and at most
    `keep_gb`, whichever is less)."""

    dir: str
    segment_s: float = 4.0
    keep_minutes: float = 60.0
    keep_gb: float = 2.0

    def __post_init__(self) -> None:
        if not (self.segment_s > 0 and self.keep_minutes > 0 and self.keep_gb > 0):
            raise ValueError("recording segment length and retention must be positive")


def segment_start(path: Path) -> float:
    """The stream time (seconds) of a segment's first packet, from its name."""
    return int(path.stem) / 1000.0


def list_segments(folder: str | Path) -> list[Path]:
    """A recording's segments, oldest first."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*" + SUFFIX) if p.stem.isdigit())


def read_log(folder: str | Path) -> dict:
    """The recording's log: `wall` (segment name -> wall-clock epoch seconds at its first packet) and `deleted`
    (`count`, and the stream times `first`-`last` the deleted segments spanned, or None); empty when absent."""
    try:
        saved = json.loads((Path(folder) / LOG_NAME).read_text())
    except (OSError, ValueError):
        saved = {}
    saved = saved if isinstance(saved, dict) else {}
    wall = saved.get("wall") if isinstance(saved.get("wall"), dict) else {}
    deleted = saved.get("deleted") if isinstance(saved.get("deleted"), dict) else {}
    return {"wall": dict(wall), "deleted": {"count": int(deleted.get("count") or 0), "first": deleted.get("first"),
                                            "last": deleted.get("last")}}


class Timestamps:
    """Muxer timestamps (TIME_BASE ticks) that never go back per stream: a muxer refuses a DTS at or before the
    previous one (EINVAL), and over RTSP a stream's clock steps back a few milliseconds when the first RTCP sender
    report re-syncs it (audio about 3 s in), or a packet carries no DTS (its PTS, in display order, stands in).
    Such a packet keeps its place, a millisecond after the one before (a step that stays a step in an MP4's
    coarser per-stream time base, 1/sample rate for audio), and its PTS is never before its DTS."""

    STEP = 90  # ticks: 1 ms

    def __init__(self) -> None:
        self._last: dict[object, int] = {}

    def next(self, key: object, pts: float, dts: float) -> tuple[int, int]:
        """(pts, dts) in ticks for a packet of stream `key` at `pts`/`dts` seconds."""
        pts_ticks, dts_ticks = round(pts / TIME_BASE), round(dts / TIME_BASE)
        if key in self._last and dts_ticks < self._last[key] + self.STEP:  # closer than a step rounds to the same
            dts_ticks = self._last[key] + self.STEP                          # tick in a coarser time base
        self._last[key] = dts_ticks
        return max(pts_ticks, dts_ticks), dts_ticks


class Recorder:
    """Writes the packets of one live source into `config.dir`; `connect` is called on every (re)connection
    with the input streams and the clock that maps a packet's own time (seconds) to stream time, or None
    while it is not known yet."""

    def __init__(self, config: RecordConfig):
        self.config = config
        self.folder = Path(config.dir)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.errors = 0
        self.segments_written = 0
        self._inputs: dict[int, object] = {}
        self._clock: Callable[[float], float | None] = lambda t: None
        self._has_video = False
        self._out = None
        self._out_streams: dict[int, object] = {}
        self._times = Timestamps()
        self._start = 0.0
        self._path: Path | None = None
        self._log = read_log(self.folder)  # a restarted job's stream continues the same log

    def connect(self, streams: list, clock: Callable[[float], float | None]) -> None:
        """A new connection: close the open segment (the new one may carry other parameters)."""
        self.close()
        self._inputs = {s.index: s for s in streams if s is not None}
        self._has_video = any(s.type == "video" for s in self._inputs.values())
        self._clock = clock

    def write(self, packet) -> None:
        """Record one demuxed packet (after it was decoded); packets before the first keyframe are skipped."""
        stream = self._inputs.get(packet.stream_index)
        if stream is None or packet.pts is None or packet.size == 0:
            return
        tb = packet.time_base
        t = self._clock(float(packet.pts * tb))
        if t is None:
            return
        dts = t if packet.dts is None else self._clock(float(packet.dts * tb))
        cut = (packet.is_keyframe and stream.type == "video") if self._has_video else True
        try:
            if self._out is None or (cut and t - self._start >= self.config.segment_s):
                if not cut:
                    return
                self._open(t)
            packet.stream = self._out_streams[packet.stream_index]
            packet.time_base = TIME_BASE
            packet.pts, packet.dts = self._times.next(packet.stream_index, t + OFFSET_S, dts + OFFSET_S)
            self._out.mux(packet)
        except (av.error.FFmpegError, OSError, ValueError) as exc:
            self.errors += 1
            log.warning("recording %s: %s (a new segment starts at the next keyframe)", self.folder, exc)
            self.close()

    def _open(self, t: float) -> None:
        self.close()
        self._path = self.folder / f"{max(0, round(t * 1000)):012d}{SUFFIX}"
        # flush_packets: every packet reaches the file at once (MPEG-TS is otherwise written in 256 kB blocks,
        # which for a low-bitrate camera is many seconds), so a moment that just fired can be played back
        self._out = av.open(str(self._path), "w", format="mpegts", options={"flush_packets": "1"})
        self._out_streams = {i: self._out.add_stream_from_template(s) for i, s in self._inputs.items()}
        self._times = Timestamps()
        self._start = t
        self.segments_written += 1
        self._log["wall"][self._path.name] = time.time()
        self.prune()

    def close(self) -> None:
        """Finish the open segment (the last one of a stream, or before a reconnect)."""
        out, self._out = self._out, None
        if out is not None:
            try:
                out.close()
            except (av.error.FFmpegError, OSError) as exc:
                self.errors += 1
                log.warning("recording %s: closing a segment: %s", self.folder, exc)

    def prune(self) -> list[Path]:
        """Delete the oldest segments (never the open one) while the ring is over its time or size limit."""
        segments = [p for p in list_segments(self.folder) if p != self._path]
        sizes = {p: _size(p) for p in segments}
        total = sum(sizes.values()) + (_size(self._path) if self._path else 0)
        newest = self._start if self._path else (segment_start(segments[-1]) if segments else 0.0)
        deleted = []
        for p in segments:
            over_time = newest - segment_start(p) > self.config.keep_minutes * 60
            if not over_time and total <= self.config.keep_gb * 1e9:
                break
            p.unlink(missing_ok=True)
            total -= sizes[p]
            deleted.append(p)
        self._note(deleted, segments)
        return deleted

    def _note(self, deleted: list[Path], segments: list[Path]) -> None:
        """Add the deleted segments to the log (their span ends where the oldest kept segment starts) and save
        it; a log that cannot be written costs the clock labels, never the recording."""
        wall, gone = self._log["wall"], self._log["deleted"]
        if deleted:
            kept = segments[len(deleted):]
            end = segment_start(kept[0]) if kept else (self._start if self._path else segment_start(deleted[-1]))
            first = segment_start(deleted[0])
            gone.update(count=gone["count"] + len(deleted), last=end,
                        first=first if gone["first"] is None else min(float(gone["first"]), first))
        present = {p.name for p in segments[len(deleted):]} | ({self._path.name} if self._path else set())
        self._log["wall"] = {k: v for k, v in wall.items() if k in present}
        tmp = self.folder / (LOG_NAME + ".tmp")
        try:
            tmp.write_text(json.dumps(self._log))
            os.replace(tmp, self.folder / LOG_NAME)
        except OSError as exc:
            log.warning("recording %s: cannot write its log: %s", self.folder, exc)

    def stats(self) -> dict:
        return {"dir": str(self.folder), "segments_written": self.segments_written, "errors": self.errors}


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def prune_recordings(root: str | Path, keep_gb: float, keep: set[str] = frozenset()) -> list[Path]:
    """Delete the oldest stream recordings under `root` (one folder each) while they hold more than `keep_gb`
    in all; folders named in `keep` (running streams) are left alone."""
    root = Path(root)
    if not root.is_dir():
        return []
    folders = sorted((p for p in root.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)
    sizes = {p: sum(_size(s) for s in p.glob("*" + SUFFIX)) for p in folders}
    total = sum(sizes.values())
    deleted = []
    for p in folders:
        if total <= keep_gb * 1e9:
            break
        if p.name in keep:
            continue
        shutil.rmtree(p, ignore_errors=True)
        total -= sizes[p]
        deleted.append(p)
    return deleted
