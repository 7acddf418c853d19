"""Decoding with PyAV: sampled RGB frames and 16 kHz mono audio, timed on the stream's own clock.

Every video frame is decoded (inter-coded video needs it) but only the frames the sampler wants are
converted to RGB, which is where most of the per-frame cost would otherwise go. When no stage reads pictures
(`decode_video=False`, e.g. `--no-visual`), video packets are demuxed but not decoded: their timestamps still
drive the sampling grid and the clock (samples without pixels), and the recorder still gets every packet.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import av
import numpy as np

from models.errors import BadInput

AUDIO_RATE = 16_000


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


class MediaDecoder:
    """Iterates a PyAV container, yielding VideoSample and AudioChunk items in demux order.

    `sample_fps` frames per second are kept (the first frame at or after each sampling instant), scaled so the
    longer side is at most `max_side`. Times are seconds from the container's start. With `decode_video`
    False the video is not decoded: each sampling instant yields a VideoSample without pixels, timed by the
    packet that reached it, and `frames_skipped` counts the video frames read but not decoded.
    """

    def __init__(self, container, sample_fps: float = 2.0, max_side: int = 640, decode_threads: int = 0,
                 decode_video: bool = True):
        self.container = container
        self.sample_fps = sample_fps
        self.max_side = max_side
        self.video = container.streams.video[0] if container.streams.video else None
        self.audio = container.streams.audio[0] if container.streams.audio else None
        if self.video is None and self.audio is None:
            raise BadInput("no video or audio stream in the source")
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
        self._resampler = (av.AudioResampler(format="flt", layout="mono", rate=AUDIO_RATE)
                           if self.audio is not None else None)
        self._audio_anchor: float | None = None
        self._audio_emitted = 0
        self.on_packet = None  # called with each packet once decoded (the recorder remuxes it)

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

    def _rel(self, t: float | None) -> float | None:
        if t is None:
            return None
        if self.zero is None:
            self.zero = t
        return t - self.zero

    def __iter__(self) -> Iterator[VideoSample | AudioChunk]:
        streams = [s for s in (self.video, self.audio) if s is not None]
        for packet in self.container.demux(streams):
            if packet.stream is self.video and not self.decode_video:
                items = [self._on_video_packet(packet)]
            else:
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
        for item in self._flush_audio():
            yield item

    def _on_video(self, frame) -> VideoSample | None:
        self.frames_decoded += 1
        t = self._sampled(frame.time)
        if t is None:
            return None
        w, h = scaled_size(frame.width, frame.height, self.max_side)
        rgb = frame.reformat(width=w, height=h, format="rgb24").to_ndarray()
        return VideoSample(t, rgb)

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
        out = self._resampler.resample(frame)
        return self._chunk(out, t)

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
