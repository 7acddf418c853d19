"""Cuts decoded samples into aligned 1-second segments on one clock (the stream's PTS).

Audio and video arrive interleaved and slightly out of order (demuxers interleave by packet), so a
second is emitted only once every present stream has moved past its end.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from pipelines.media.decode import AUDIO_RATE, AudioChunk, MediaDecoder, VideoSample
from pipelines.media.segment import Segment


class Segmenter:
    """Accumulates VideoSample/AudioChunk items and yields complete Segments in index order.

    `offset` shifts every incoming time (used to keep one timeline across reconnects of a live source).
    """

    STALL_S = 5.0  # more than demuxers ever interleave one stream behind the other

    def __init__(self, source_id: str, has_video: bool, has_audio: bool, segment_s: float = 1.0):
        if segment_s != 1.0:
            raise ValueError("only 1-second segments are supported")
        self.source_id = source_id
        self.has_video = has_video
        self.has_audio = has_audio
        self.offset = 0.0
        self.next_index = 0
        self._frames: dict[int, list[tuple[float, np.ndarray]]] = {}
        self._undecoded: dict[int, int] = {}  # sampling instants per second whose frame was not decoded
        self._audio_start = 0  # absolute sample index of _audio[0]
        self._audio = np.zeros(0, dtype=np.float32)
        self._audio_filled = np.zeros(0, dtype=bool)
        self._video_watermark = -math.inf
        self._audio_watermark = -math.inf
        self._origin: float | None = None  # the first item's time since the streams were (re)set
        self.last_time = 0.0

    def reset_streams(self, has_video: bool, has_audio: bool) -> None:
        """Called after a reconnect: the new connection may carry different streams."""
        self.has_video, self.has_audio = has_video, has_audio
        self._video_watermark = self._audio_watermark = -math.inf
        self._origin = None

    def push(self, item: VideoSample | AudioChunk) -> Iterator[Segment]:
        t = item.time + self.offset
        self._origin = t if self._origin is None else self._origin
        if isinstance(item, VideoSample):
            k = int(math.floor(t + 1e-9))
            if k >= self.next_index and item.rgb is None:  # the clock moves on; the frame was not decoded
                self._undecoded[k] = self._undecoded.get(k, 0) + 1
            elif k >= self.next_index:
                self._frames.setdefault(k, []).append((t, item.rgb))
            self._video_watermark = max(self._video_watermark, t)
            self.last_time = max(self.last_time, t)
        else:
            self._add_audio(t, item.samples)
            end_t = t + item.samples.size / AUDIO_RATE
            self._audio_watermark = max(self._audio_watermark, end_t)
            self.last_time = max(self.last_time, end_t)
        yield from self._emit_ready()

    def _add_audio(self, t: float, samples: np.ndarray) -> None:
        first = int(round(t * AUDIO_RATE)) - self._audio_start
        if first < 0:  # audio before the kept window (already emitted): drop that part
            samples = samples[-first:]
            first = 0
        end = first + samples.size
        if end > self._audio.size:
            grow = end - self._audio.size
            self._audio = np.concatenate([self._audio, np.zeros(grow, np.float32)])
            self._audio_filled = np.concatenate([self._audio_filled, np.zeros(grow, bool)])
        self._audio[first:end] = samples
        self._audio_filled[first:end] = True

    def _watermark(self) -> float:
        """How far every stream that still sends has come. A stream `STALL_S` behind the other has stopped (a
        camera that declares a sound track and sends none, a sound track shorter than the picture): the seconds go
        on without it, its part of them empty (late data for them is dropped). Before, they were held until it
        came back: a live stream gave nothing, and a file held every frame in memory until its end."""
        if self._origin is None:
            return -math.inf
        # a stream not heard from yet counts from the first item: one that starts late is waited for `STALL_S`
        marks = [max(mark, self._origin) for mark, present in ((self._video_watermark, self.has_video),
                                                               (self._audio_watermark, self.has_audio)) if present]
        if not marks:
            return -math.inf
        return min(mark for mark in marks if mark >= max(marks) - self.STALL_S)

    def _emit_ready(self) -> Iterator[Segment]:
        mark = self._watermark()
        while self.next_index + 1 <= mark + 1e-9:
            yield self._make(self.next_index, self.next_index + 1.0)

    def flush(self, final: bool = True) -> Iterator[Segment]:
        """Emit every second that has data, the last one possibly shorter than 1 s."""
        end_time = self.last_time
        while self.next_index < end_time - 0.1:
            end = min(self.next_index + 1.0, end_time)
            seg = self._make(self.next_index, end)
            seg.final = final and self.next_index >= end_time - 0.1
            yield seg

    def skip_to(self, index: int) -> None:
        """Jump the timeline forward (a live gap): seconds before `index` are lost, not emitted."""
        if index <= self.next_index:
            return
        for k in [k for k in self._frames if k < index]:
            del self._frames[k]
        for k in [k for k in self._undecoded if k < index]:
            del self._undecoded[k]
        drop = index * AUDIO_RATE - self._audio_start
        if drop > 0:
            self._audio = self._audio[drop:]
            self._audio_filled = self._audio_filled[drop:]
            self._audio_start = index * AUDIO_RATE
        self.next_index = index

    def _make(self, index: int, end: float) -> Segment:
        frames = self._frames.pop(index, [])
        frames.sort(key=lambda f: f[0])
        audio = None
        if self.has_audio:
            n = int(round((end - index) * AUDIO_RATE))
            lo = index * AUDIO_RATE - self._audio_start
            audio = np.zeros(n, np.float32)
            avail = self._audio[max(lo, 0):lo + n]
            audio[max(-lo, 0):max(-lo, 0) + avail.size] = avail
            cut = lo + n
            if cut > 0:
                self._audio = self._audio[cut:]
                self._audio_filled = self._audio_filled[cut:]
                self._audio_start += cut
        self.next_index = index + 1
        return Segment(
            source_id=self.source_id, index=index, start=float(index), end=float(end),
            frames=[f[1] for f in frames], frame_times=[f[0] for f in frames], audio=audio,
            emitted_wall=time.time(), frames_not_decoded=self._undecoded.pop(index, 0),
        )


def iter_segments(path: str | Path, sample_fps: float = 2.0, max_side: int = 640) -> Iterator:
    """Aligned 1-s `Segment`s of a media file, decoded in this process (no Ray), as the live spine cuts them."""
    import av


    with av.open(str(path)) as container:
        decoder = MediaDecoder(container, sample_fps=sample_fps, max_side=max_side, decode_threads=1)
        seg = Segmenter(Path(path).stem, decoder.video is not None, decoder.audio is not None)
        for item in decoder:
            yield from seg.push(item)
        yield from seg.flush(final=True)
