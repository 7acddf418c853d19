"""Playable clips cut from a live source's recording (`recorder.py`), without re-encoding: the segments that
cover a stream-time range are remuxed into one MP4 that a browser plays.

A clip starts on the last video keyframe at or before the asked start (a player cannot start between
keyframes without the frames before), so `Clip.start` (the stream time of the clip's 0) can be a little
earlier than asked; `Clip.offset(t)` is where stream time `t` is in the clip. The recorder starts at the
stream's first video keyframe, which comes up to a GOP (or a slow RTSP join) after the stream clock's 0 (its
first audio): a range before it, such as a first event at 0.0-0.6 s, is served from that keyframe, later than
asked. The same holds after a gap in the recording (a camera outage: the clock goes on, nothing is recorded):
a clip never starts before a gap that lies before the asked start, or it would be mostly the outage; when no
keyframe lies between the gap's end and the start, it starts at the first one recorded after the gap. A clip
is never longer than MAX_CLIP_S: when its keyframe lies before the asked start, its end is cut that much short.
"""

from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass
from pathlib import Path

import av

from pipelines.media.recorder import OFFSET_S, TIME_BASE, Timestamps, list_segments, segment_start

MAX_CLIP_S = 120.0
GAP_S = 2.0  # packets further apart than this (and than 3x the recording's usual spacing) are a recording gap
FIRST_KEYFRAME_LEAD_S = 3.0  # how late a recording's first keyframe may start and still be the stream's start


class NotRecorded(LookupError):
    """Nothing of the asked range is in the recording (never recorded, or deleted by the retention)."""


class ClipFailed(RuntimeError):
    """The recording holds the range but its packets could not be remuxed (a server fault, not a bad request)."""


@dataclass
class Clip:
    data: bytes  # an MP4 (moov first)
    start: float  # stream time of the clip's 0 s
    end: float  # stream time of its last packet
    segments: list[str]  # the recording's files it came from

    def offset(self, t: float) -> float:
        return max(0.0, t - self.start)


def recorded_range(folder: str | Path) -> tuple[float, float] | None:
    """The stream times of the oldest segment's start and of the newest packet written, or None."""
    segments = list_segments(folder)
    if not segments:
        return None
    with _Reader(segments[-1:]) as reader:
        last = max([segment_start(segments[-1])] + [t for _, t, _ in reader.packets])
    return segment_start(segments[0]), last


class _Reader:
    """The packets (packet, stream time, "video" or "audio") of some segments in file order, their containers
    open until the reader closes; a segment still being written ends at its last complete packet."""

    def __init__(self, paths: list[Path]):
        self.containers, self.packets = [], []
        for path in paths:
            try:
                container = av.open(str(path))
            except (av.error.FFmpegError, OSError):
                continue
            self.containers.append(container)
            streams = [s for s in container.streams if s.type in ("video", "audio")]
            try:
                for packet in container.demux(streams):
                    if packet.pts is not None and packet.size:
                        t = float(packet.pts * packet.time_base) - OFFSET_S
                        self.packets.append((packet, t, packet.stream.type))
            except (av.error.FFmpegError, OSError):
                pass

    def __enter__(self) -> _Reader:
        return self

    def __exit__(self, *exc) -> None:
        for container in self.containers:
            container.close()


def cut_clip(folder: str | Path, start: float, end: float) -> Clip:
    """The recording between stream times `start` and `end` (at most MAX_CLIP_S) as an MP4 of at most MAX_CLIP_S
    (from the stream's first keyframe for a range before it, from the first one after a gap for a range just after
    an outage); NotRecorded when the recording holds none of it, ValueError for a bad range."""
    if not (math.isfinite(start) and math.isfinite(end) and 0 <= start < end):
        raise ValueError("a clip needs 0 <= start < end")
    if end - start > MAX_CLIP_S:
        raise ValueError(f"a clip is at most {MAX_CLIP_S:.0f} s long")
    segments = list_segments(folder)
    starts = [segment_start(p) for p in segments]
    if starts and end < starts[0] <= FIRST_KEYFRAME_LEAD_S:  # before the stream's first recorded keyframe
        start, end = starts[0], starts[0] + (end - start)
    chosen = [p for i, p in enumerate(segments)
              if starts[i] <= end and (i + 1 == len(segments) or starts[i + 1] > start)]
    with _Reader(chosen) as reader:
        picked = _pick(reader.packets, start, end)
        if not picked:
            raise NotRecorded(f"the recording holds nothing between {start:.1f} s and {end:.1f} s")
        origin = picked[0][1]
        with tempfile.TemporaryDirectory(prefix="foresight-clip-") as tmp:
            path = Path(tmp) / "clip.mp4"
            try:
                _write(path, picked, origin)
            except av.error.FFmpegError as exc:  # some are ValueErrors too: not to be read as a bad range
                raise ClipFailed(f"the clip {start:.1f}-{end:.1f} s could not be cut from the recording: {exc}") from exc
            data = path.read_bytes()
    return Clip(data, origin, max(t for _, t, _ in picked), [p.name for p in chosen])


def _pick(packets: list, start: float, end: float) -> list:
    """The packets from the last keyframe at or before `start` (else the first one before `end`) to `end`, never
    from before a gap that precedes `start` and never more than MAX_CLIP_S of them."""
    if not any(start <= t <= end for _, t, _ in packets):
        return []
    has_video = any(kind == "video" for _, _, kind in packets)
    resumed = _resumed_at([t for _, t, _ in packets], start)
    keys = [i for i, (packet, t, kind) in enumerate(packets)
            if resumed <= t <= end and ((kind == "video" and packet.is_keyframe) or not has_video)]
    if not keys:
        return []
    before = [i for i in keys if packets[i][1] <= start]
    first = before[-1] if before else keys[0]
    origin = packets[first][1]
    limit = origin + MAX_CLIP_S  # the clip's last packet ends by then, whatever the keyframe's lead on `start`
    # video keeps its decode order (a frame shown before the keyframe may follow it); audio starts at the origin
    return [packets[first]] + [p for p in packets[first + 1:]
                               if p[1] <= end and p[1] + _length(p[0]) <= limit
                               and (p[2] == "video" or p[1] >= origin - 1e-6)]


def _resumed_at(times: list[float], start: float) -> float:
    """The stream time the recording resumed at after its last gap that begins before `start` (an outage, or
    segments lost to a recording error), or -inf when none: a clip from a keyframe before it would play the
    outage as a frozen picture, then the asked range."""
    ordered = sorted(times)
    steps = sorted(b - a for a, b in zip(ordered, ordered[1:], strict=False))
    if not steps:
        return -math.inf
    gap = max(GAP_S, 3 * steps[len(steps) // 2])  # a sparse stream's (a 0.2-fps camera's) own spacing is no gap
    resumed = -math.inf
    for a, b in zip(ordered, ordered[1:], strict=False):
        if a >= start:
            break
        if b - a > gap:
            resumed = b - 1e-6
    return resumed


def _length(packet) -> float:
    """A packet's duration in seconds (0 when the demuxer gives none)."""
    return float(packet.duration * packet.time_base) if packet.duration else 0.0


def _write(path: Path, packets: list, origin: float) -> None:
    """Mux `packets` into `path` with times from `origin` (the clip's 0 s)."""
    out = av.open(str(path), "w", format="mp4", options={"movflags": "+faststart"})
    try:
        streams, times = {}, Timestamps()
        for packet, _, kind in packets:  # every output stream exists before the first packet is written
            if kind not in streams:
                streams[kind] = out.add_stream_from_template(packet.stream)
        for packet, t, kind in packets:
            dts = float(packet.dts * packet.time_base) - OFFSET_S if packet.dts is not None else t
            packet.stream = streams[kind]
            packet.time_base = TIME_BASE
            packet.pts, packet.dts = times.next(kind, t - origin, dts - origin)
            out.mux(packet)
    finally:
        out.close()
