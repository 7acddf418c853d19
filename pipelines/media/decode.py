"""Decoding with PyAV: sampled RGB frames and 16 kHz mono audio, timed on the stream's own clock.

Only the frames the sampler may take and the reference frames (which the others are predicted from) are
decoded: a packet whose frame cannot be a sampled one is decoded with `skip_frame="NONREF"`, so FFmpeg drops it
if no other frame refers to it (H.264/HEVC B-frames, mostly). Which frame the sampler takes is decided from the
packet's timestamp before decoding (`_may_be_sampled`), so the sampled frames, and with them motion, the
motion gate and every model's input, are those of decoding every frame. Only sampled frames are converted to
RGB, which is where most of the per-frame cost would otherwise go. When no stage reads pictures
(`decode_video=False`, e.g. `--no-visual`), video packets are demuxed but not decoded: their timestamps still
drive the sampling grid and the clock (samples without pixels), and the recorder still gets every packet.
"""

from __future__ import annotations

import math
import os
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

import av
import numpy as np

from models.errors import BadInput
from pipelines.media.sources import media_streams

AUDIO_RATE = 16_000
DECODE_ALL_ENV = "FORESIGHT_DECODE_ALL"  # "1": decode every frame (the benchmarks' reference)
_EPS = 1e-3  # seconds of slack around a sampling instant: a frame this close to one is always decoded


@dataclass
class VideoSample:
    time: float
    rgb: np.ndarray | None  # H x W x 3 uint8; None: the frame at this sampling instant was not decoded


@dataclass
class AudioChunk:
    time: float
    samples: np.ndarray  # float32 mono at AUDIO_RATE


@dataclass
class StreamInfo:
    has_video: bool
    has_audio: bool
    duration_s: float | None
    fps: float | None
    width: int | None
    height: int | None
    audio_rate: int | None


def scaled_size(width: int, height: int, max_side: int) -> tuple[int, int]:
    """Fit (width, height) inside max_side on the longer side, keeping even dimensions for swscale."""
    scale = min(1.0, max_side / max(width, height)) if max_side > 0 else 1.0
    return max(2, int(round(width * scale / 2)) * 2), max(2, int(round(height * scale / 2)) * 2)


def upright(rgb: np.ndarray, rotation: float) -> np.ndarray:
    """The picture as players show it. A phone held upright records its picture sideways and says so in the
    stream's display matrix; PyAV gives that as `frame.rotation`, degrees counterclockwise (FFmpeg's own
    autorotation turns the picture the same way)."""
    k = round(rotation / 90) % 4
    return np.ascontiguousarray(np.rot90(rgb, k)) if k else rgb


def pixel_aspect(stream) -> float:
    """A video stream's pixel width over height (anamorphic: a D1 camera's 12:11); 1 when square or unknown."""
    sar = stream.sample_aspect_ratio if stream is not None else None
    return float(sar) if sar else 1.0


def shown_picture(frame, aspect: float = 1.0, max_side: int = 0) -> np.ndarray:
    """A decoded frame as RGB the way players show it: in square pixels (`aspect`: `pixel_aspect`), the longer
    side at most `max_side` (0: as stored), turned upright."""
    w, h = scaled_size(round(frame.width * aspect), frame.height, max_side)
    return upright(frame.reformat(width=w, height=h, format="rgb24").to_ndarray(), frame.rotation)


class ContinuousClock:
    """Keeps each stream's timestamps continuous in the formats whose clock may start again mid-stream (FFmpeg's
    AVFMT_TS_DISCONT: MPEG-TS and HLS): concatenated TS recordings, HLS discontinuities, an encoder restarted
    behind a live TS or HLS feed. Players carry on (FFmpeg shifts such timestamps too). On the raw times a clock
    that went back lost the second part (the sampler skipped every frame until the old time came round again),
    and one that leapt ahead filled the result with empty seconds (a new encoder's clock an hour on: 3,600 of
    them, and `--max-duration` then cut the second part off). A packet whose stream's decode time falls more than
    `JUMP_BACK_S` below that stream's latest, or leaps more than `JUMP_AHEAD_S` past it, is shifted, with every
    later packet of the stream, to continue one packet after it. On a live source a leap is measured beyond the
    wall time that passed since the stream's last packet: a feed that stalled for a minute and came back a
    minute on kept its time. Other formats (MP4, RTSP, ...) pass as they are."""

    JUMP_BACK_S = 0.5  # more than B-frame reordering or audio/video interleave ever moves a stream's DTS back
    JUMP_AHEAD_S = 10.0  # FFmpeg's own `-dts_delta_threshold` for these formats
    TS_DISCONT = 0x0200  # AVFMT_TS_DISCONT in `container.format.flags`

    def __init__(self, container, live: bool = False):
        self.enabled = bool(container.format.flags & self.TS_DISCONT)
        self.live = live
        self.wall = time.monotonic  # a live packet's arrival (a test plays it)
        self.jumps = 0
        self._shift: dict[int, int] = {}  # stream index -> ticks added to its timestamps
        # stream index -> (latest shifted decode time, packet duration, monotonic time that packet arrived)
        self._last: dict[int, tuple[int, int, float]] = {}

    def mend(self, packet) -> None:
        """Shift `packet`'s pts and dts in place when its stream's clock went back or leapt ahead."""
        if not self.enabled:  # every packet of every other format: nothing to look at
            return
        ts = packet.dts if packet.dts is not None else packet.pts
        if ts is None or packet.size == 0 or packet.time_base is None:
            return
        index = packet.stream.index
        shift = self._shift.get(index, 0)
        latest = self._last.get(index)
        now = self.wall() if self.live else 0.0
        if latest is not None:
            step = float((ts + shift - latest[0]) * packet.time_base)
            if step < -self.JUMP_BACK_S or step > self.JUMP_AHEAD_S + (now - latest[2]):
                shift = latest[0] + max(latest[1], 1) - ts
                self._shift[index] = shift
                self.jumps += 1
        if shift:
            packet.dts = packet.dts + shift if packet.dts is not None else None
            packet.pts = packet.pts + shift if packet.pts is not None else None
        if latest is None or ts + shift > latest[0]:
            self._last[index] = (ts + shift, packet.duration or 0, now)


class MediaDecoder:
    """Iterates a PyAV container, yielding VideoSample and AudioChunk items in demux order.

    `sample_fps` frames per second are kept (the first frame at or after each sampling instant), scaled so the
    longer side is at most `max_side`, as players show them (`shown_picture`: square pixels, upright). Times
    are seconds from the container's start (`clock` continues a clock that starts again or leaps ahead; a `live`
    source's leap is measured beyond the wall time that passed). With `decode_video` False the video is not
    decoded: each sampling instant yields a VideoSample without pixels, timed by the packet that reached it,
    and `frames_skipped` counts the video frames read but not decoded (also the non-reference frames left
    undecoded because the sampler could not take them; `skip_unsampled=False` or FORESIGHT_DECODE_ALL=1
    decodes every frame).
    """

    SHORT_S = 1.0  # a file that ends this much before its declared duration was cut short
    DECLARED = frozenset({"mov", "matroska", "avi", "flv", "asf", "wav"})  # formats whose header holds the duration

    def __init__(self, container, sample_fps: float = 2.0, max_side: int = 640, decode_threads: int = 0,
                 decode_video: bool = True, skip_unsampled: bool | None = None, live: bool = False):
        self.container = container
        self.sample_fps = sample_fps
        self.max_side = max_side
        self.video, self.audio = media_streams(container)
        if self.video is None and self.audio is None:
            raise BadInput("no video or audio stream in the source")
        self.pixel_aspect = pixel_aspect(self.video)
        if self.video is not None:
            self.video.thread_type = "AUTO"
            if decode_threads:
                self.video.thread_count = decode_threads
        start = container.start_time
        self.zero = start / av.time_base if start is not None else None
        self.decode_video = decode_video
        self.frames_decoded = 0
        self.frames_skipped = 0
        self.decode_errors = 0
        self._next_sample = 0.0
        self._last_video_t: float | None = None
        if skip_unsampled is None:
            skip_unsampled = os.environ.get(DECODE_ALL_ENV, "") != "1"
        self.skip_unsampled = skip_unsampled and decode_video and self.video is not None
        self._recent_pts: deque[float] = deque(maxlen=32)  # the last packets' times, in decode order
        self._unwanted: list[float] = []  # times of packets sent with NONREF whose frame has not come out yet
        self._skip_mode = "DEFAULT"
        self._resampler = (av.AudioResampler(format="flt", layout="mono", rate=AUDIO_RATE)
                           if self.audio is not None else None)
        self._audio_setup: tuple | None = None  # (sample format, layout, rate) the resampler was set up for
        self._audio_anchor: float | None = None
        self._audio_emitted = 0
        self.on_packet = None  # called with each packet once decoded (the recorder remuxes it)
        self._end: float | None = None  # the latest packet end, seconds on the container's clock (`check_length`)
        self.clock = ContinuousClock(container, live)  # `clock.jumps`: how often a stream's clock jumped

    def info(self) -> StreamInfo:
        duration = None
        if self.container.duration is not None and self.container.duration > 0:
            duration = self.container.duration / av.time_base
        v = self.video
        fps = float(v.average_rate) if v is not None and v.average_rate else None
        return StreamInfo(
            has_video=v is not None, has_audio=self.audio is not None, duration_s=duration, fps=fps,
            width=v.codec_context.width if v is not None else None,
            height=v.codec_context.height if v is not None else None,
            audio_rate=self.audio.codec_context.sample_rate if self.audio is not None else None,
        )

    def check_length(self, info: StreamInfo) -> str | None:
        """After a file was read to its end, what its packets held against the duration it gave. In a format whose
        header declares the duration, a warning when they end more than `SHORT_S` before it (an interrupted copy
        or upload: FFmpeg stops at the cut without an error). In one whose duration FFmpeg estimates (from the
        bitrate: a VBR MP3's was off by half; from the last timestamp: a TS file's, across a jump of its clock),
        `info.duration_s` becomes what the packets held."""
        if self._end is None or info.duration_s is None:
            return None
        start = self.container.start_time / av.time_base if self.container.start_time is not None else 0.0
        held = self._end - start
        if self.estimated():
            if abs(held - info.duration_s) > self.SHORT_S:
                info.duration_s = round(held, 3)
            return None
        if held >= info.duration_s - self.SHORT_S:
            return None
        return f"the file ends at {held:.1f} s, short of the {info.duration_s:.1f} s its header declares (cut short?)"

    def estimated(self) -> bool:
        """Whether FFmpeg estimated the duration (from the bitrate or the last timestamp) rather than read it from a
        header: the formats outside `DECLARED`."""
        return not set((self.container.format.name or "").split(",")) & self.DECLARED

    def held_length(self, beyond_s: float) -> float:
        """How many seconds the packets hold, read without decoding (through the clock, as the analysis reads
        them); the count stops once it passes `beyond_s`. For a limit checked against an estimated duration."""
        start = self.container.start_time / av.time_base if self.container.start_time is not None else 0.0
        end = start
        for packet in self.container.demux([s for s in (self.video, self.audio) if s is not None]):
            self.clock.mend(packet)
            if packet.pts is not None and packet.time_base is not None:
                end = max(end, float((packet.pts + (packet.duration or 0)) * packet.time_base))
                if end - start > beyond_s:
                    break
        return end - start

    def _rel(self, t: float | None) -> float | None:
        if t is None:
            return None
        if self.zero is None:
            self.zero = t
        return t - self.zero

    def __iter__(self) -> Iterator[VideoSample | AudioChunk]:
        streams = [s for s in (self.video, self.audio) if s is not None]
        for packet in self.container.demux(streams):
            self.clock.mend(packet)
            if packet.pts is not None and packet.time_base is not None:  # how far the file goes
                end = float((packet.pts + (packet.duration or 0)) * packet.time_base)
                self._end = end if self._end is None else max(self._end, end)
            if packet.stream is self.video and not self.decode_video:
                items = [self._on_video_packet(packet)]
            else:
                if self.skip_unsampled and packet.stream is self.video:
                    self._set_skip(packet)
                try:
                    frames = packet.decode()
                except av.error.InvalidDataError:
                    self.decode_errors += 1
                    continue
                items = [self._on_video(f) if packet.stream is self.video else self._on_audio(f) for f in frames]
            if self.on_packet is not None:  # after decoding: the clock's zero is known from the first frame
                self.on_packet(packet)
            for item in items:
                if item is not None:
                    yield item
        self.frames_skipped += len(self._unwanted)  # never came out of the decoder: skipped
        self._unwanted.clear()
        for item in self._flush_audio():
            yield item

    def _set_skip(self, packet) -> None:
        """Decode this packet's frame whatever its kind if the sampler may take it; else only if it is a reference."""
        wanted, t = self._may_be_sampled(packet)
        mode = "DEFAULT" if wanted else "NONREF"
        if mode != self._skip_mode:  # per packet: FFmpeg's frame threads copy it when the packet is submitted
            self.video.codec_context.skip_frame = mode
            self._skip_mode = mode
        if not wanted:
            self._unwanted.append(t)
            if len(self._unwanted) > 64:  # frames without times never settle it; no decoder holds 64 frames back
                self._unwanted.pop(0)
                self.frames_skipped += 1

    def _may_be_sampled(self, packet) -> tuple[bool, float | None]:
        """Whether the frame of this packet could be the first at or after a sampling instant, and its time.

        A frame at t is sampled exactly when a grid instant k/sample_fps lies in (q, t], q being the time of the
        frame shown just before it. Packets come in decode order, so q is not known yet, but the latest time below
        t among the packets seen so far is at most q: testing that wider interval never skips a sampled frame."""
        if packet.size == 0 or packet.pts is None or self.zero is None:
            return True, None
        t = float(packet.pts * packet.time_base) - self.zero
        before = [s for s in self._recent_pts if s < t]
        self._recent_pts.append(t)
        if not before:
            return True, t
        latest_instant = math.floor((t + _EPS) * self.sample_fps) / self.sample_fps
        return latest_instant > max(before) - _EPS, t

    def _count_unwanted(self, t: float | None) -> None:
        """A frame at t came out: the NONREF packets before it that did not come out were skipped (frames come
        out in presentation order), and one at t was a reference frame, decoded."""
        if not self._unwanted or t is None:
            return
        left = [u for u in self._unwanted if u > t + 1e-6]
        self.frames_skipped += sum(1 for u in self._unwanted if u < t - 1e-6)
        self._unwanted = left

    def _on_video(self, frame) -> VideoSample | None:
        self.frames_decoded += 1
        if self._unwanted:
            self._count_unwanted(frame.time - self.zero if frame.time is not None and self.zero is not None else None)
        t = self._sampled(frame.time)
        if t is None:
            return None
        return VideoSample(t, shown_picture(frame, self.pixel_aspect, self.max_side))

    def _on_video_packet(self, packet) -> VideoSample | None:
        """A video packet not decoded: one frame read; a sample without pixels if it reaches a sampling instant."""
        if packet.size == 0:  # the demuxer's end-of-stream packet (a decoder flush), not a frame
            return None
        self.frames_skipped += 1
        pts = packet.pts if packet.pts is not None else packet.dts
        t = self._sampled(float(pts * packet.time_base) if pts is not None else None)
        return None if t is None else VideoSample(t, None)

    def _sampled(self, when: float | None) -> float | None:
        """The frame's time if it is the first at or after the next sampling instant, else None."""
        t = self._rel(when)
        if t is None:  # no timestamp: continue from the last one at the nominal rate
            rate = float(self.video.average_rate or 30)
            t = (self._last_video_t + 1.0 / rate) if self._last_video_t is not None else 0.0
        self._last_video_t = t
        if t + 1e-6 < self._next_sample:
            return None
        # Next sampling instant strictly after t, on the fixed grid k/sample_fps (robust to variable frame rate).
        step = 1.0 / self.sample_fps
        self._next_sample = (int(t * self.sample_fps + 1e-6) + 1) * step
        return t

    def _on_audio(self, frame) -> AudioChunk | None:
        t = self._rel(frame.time)
        tail = []
        setup = (frame.format.name, frame.layout.name, frame.sample_rate)
        if setup != self._audio_setup:
            # The source's sound changed format mid-stream (a TS or HLS programme or advert, joined recordings):
            # FFmpeg's resampler is set up by its first frame and refuses others, which ended the analysis. The
            # old one's last samples go out first, then a new one takes over.
            if self._audio_setup is not None:
                tail = self._resampler.resample(None)
                self._resampler = av.AudioResampler(format="flt", layout="mono", rate=AUDIO_RATE)
            self._audio_setup = setup
        out = self._resampler.resample(frame)
        held = sum(f.samples for f in tail) / AUDIO_RATE
        return self._chunk(tail + out, t - held if t is not None else None)

    def _chunk(self, frames, t: float | None) -> AudioChunk | None:
        if not frames:
            return None
        samples = np.concatenate([f.to_ndarray().reshape(-1) for f in frames]).astype(np.float32, copy=False)
        expected = None if self._audio_anchor is None else self._audio_anchor + self._audio_emitted / AUDIO_RATE
        if expected is None or (t is not None and abs(t - expected) > 0.1):
            # First chunk, or a real discontinuity in the audio clock: re-anchor on the frame's own time.
            self._audio_anchor = t if t is not None else (expected or 0.0)
            self._audio_emitted = 0
            expected = self._audio_anchor
        self._audio_emitted += samples.size
        return AudioChunk(expected, samples)

    def _flush_audio(self) -> Iterator[AudioChunk]:
        if self._resampler is None:
            return
        try:
            out = self._resampler.resample(None)
        except (ValueError, av.error.FFmpegError):
            return
        chunk = self._chunk(out, None)
        if chunk is not None:
            yield chunk
