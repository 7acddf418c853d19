"""Ingest: turns a source into a stream of Segments in a background thread.

Live sources (devices, RTSP, HLS) reconnect with exponential backoff and jitter, keep one timeline across
outages (the lost seconds are reported), and never let latency grow: when the consumer falls behind, the
oldest segments are dropped and counted. Files are read with backpressure and never drop anything.
"""

from __future__ import annotations

import functools
import math
import random
import threading
import time
from collections import deque

import av

from models.errors import BadInput, StreamFailed
from pipelines.media.decode import MediaDecoder, StreamInfo
from pipelines.media.ingest_stats import Health, IngestStats, ReconnectPolicy
from pipelines.media.recorder import RecordConfig, Recorder
from pipelines.media.redact import redact
from pipelines.media.segment import Segment
from pipelines.media.segmenter import Segmenter
from pipelines.media.sources import SourceSpec, open_container


class BoundedBuffer:
    """A thread-safe FIFO of at most `maxsize` items: blocks the producer, or drops the oldest item (live)."""

    def __init__(self, maxsize: int, drop_oldest: bool):
        self.maxsize = maxsize
        self.drop_oldest = drop_oldest
        self._items: deque = deque()
        self._cond = threading.Condition()
        self._closed = False

    def put(self, item, on_drop=None) -> None:
        with self._cond:
            while len(self._items) >= self.maxsize and not self._closed:
                if self.drop_oldest:
                    dropped = self._items.popleft()
                    if on_drop is not None:
                        on_drop(dropped)
                    break
                self._cond.wait(0.1)
            if self._closed:
                return
            self._items.append(item)
            self._cond.notify_all()

    def get(self, timeout: float | None = None):
        """The next item; raises TimeoutError if none arrives within `timeout`."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while not self._items:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise TimeoutError
                self._cond.wait(remaining if remaining is not None else 0.5)
            item = self._items.popleft()
            self._cond.notify_all()
            return item

    def __len__(self) -> int:
        with self._cond:
            return len(self._items)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()


_END = object()


class SegmentReader:
    """Reads `spec` into Segments on a background thread; `get()` returns the next Segment or None at the end.

    Errors that end the stream (bad file, source never reachable, outage past the budget) are raised from
    `get()` as BadInput/StreamFailed after the segments before them have been delivered.
    """

    def __init__(self, spec: SourceSpec, source_id: str, sample_fps: float = 2.0, max_side: int = 640,
                 buffer_segments: int = 8, policy: ReconnectPolicy | None = None, open_timeout_s: float = 10.0,
                 watchdog_s: float = 5.0, duration_s: float | None = None, seed: int | None = None,
                 record: RecordConfig | None = None, decode_video: bool = True):
        self.spec, self.source_id, self.sample_fps, self.max_side = spec, source_id, sample_fps, max_side
        self.decode_video = decode_video  # False: no stage reads pictures; video is demuxed for clock and recorder
        self.policy = policy or ReconnectPolicy()
        self.open_timeout_s = open_timeout_s
        self.watchdog_s = watchdog_s
        self.duration_s = duration_s
        self.stats = IngestStats()
        self.info: StreamInfo | None = None
        self._buffer = BoundedBuffer(buffer_segments, drop_oldest=spec.live)
        self._stop = threading.Event()
        self._rng = random.Random(seed)
        self._thread = threading.Thread(target=self._run, name=f"ingest-{source_id}", daemon=True)
        self._info_ready = threading.Event()
        self._segmenter: Segmenter | None = None
        self._delivered = False  # the source has sent data: from then on the reconnect policy applies
        self._last_data = (0.0, 0.0)  # (monotonic, wall-clock) time the last item arrived: where an outage starts
        self._pending = None  # a reconnection's bookkeeping, run when data first comes through it (`_resumed`)
        self.timings = {"decode_s": 0.0, "segment_s": 0.0}  # seconds the reader thread spent in each
        # a live source's packets are also remuxed into a ring of segments on disk (recorder.py)
        self.recorder = Recorder(record) if record is not None and spec.live else None

    def start(self) -> SegmentReader:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Ask the reader to finish: it flushes what it has and ends the stream (within `watchdog_s`)."""
        self._stop.set()

    def wait_info(self, timeout: float) -> StreamInfo | None:
        """Block until the first connection is made (or failed); returns the stream info if known."""
        self._info_ready.wait(timeout)
        return self.info

    def get(self, timeout: float | None = None) -> Segment | None:
        item = self._buffer.get(timeout)
        if item is _END:
            return None
        if isinstance(item, BaseException):
            raise item
        return item

    # -- producer side -------------------------------------------------------------------------------
    def _emit(self, seg: Segment) -> None:
        seg.dropped_before = self.stats.frames_dropped
        self.stats.segments_emitted += 1
        self.stats.analysed_until = max(self.stats.analysed_until, float(seg.end))
        if self.recorder is not None:
            self.stats.recording = self.recorder.stats()
        self._buffer.put(seg, on_drop=self._on_drop)

    def _on_drop(self, seg) -> None:
        if isinstance(seg, Segment):
            self.stats.segments_dropped += 1
            self.stats.frames_dropped += len(seg.frames) + seg.frames_not_decoded

    def _finish(self, error: BaseException | None = None) -> None:
        if error is not None:
            self._buffer.put(error)
        self._buffer.put(_END)
        self._info_ready.set()

    def _run(self) -> None:
        try:
            if self.spec.live:
                try:
                    self._run_live()
                finally:
                    if self.recorder is not None:
                        self.recorder.close()
                        self.stats.recording = self.recorder.stats()
            else:
                self._run_once()
        except BadInput as exc:
            self.stats.health = Health.FAILED
            self.stats.failure = str(exc)
            self._finish(exc)
            return
        except Exception as exc:  # an internal failure: surface it to the consumer, do not hang it
            self.stats.health = Health.FAILED
            self.stats.failure = f"internal error: {exc!r}"
            self._finish(exc)
            return
        if self.stats.health is not Health.FAILED:
            self.stats.health = Health.ENDED
        self._finish()

    def _connect(self) -> tuple[object, MediaDecoder]:
        container = open_container(self.spec, self.open_timeout_s, self.watchdog_s)
        try:
            decoder = MediaDecoder(container, self.sample_fps, self.max_side, decode_video=self.decode_video,
                                   live=self.spec.live)
        except BadInput:
            container.close()
            raise
        info = decoder.info()
        if self.info is None:
            self.info = info
        if self.recorder is not None:
            self.recorder.connect([decoder.video, decoder.audio], lambda t: self._stream_time(decoder, t))
            self.stats.recording = self.recorder.stats()
            decoder.on_packet = self.recorder.write
        return container, decoder

    def _stream_time(self, decoder: MediaDecoder, t: float) -> float | None:
        """A packet's own time on the stream's clock (the segmenter's, continued across reconnects)."""
        if decoder.zero is None or self._segmenter is None:
            return None
        self._resumed()  # the recorder's first packet of a session may come before the first decoded item
        return t - decoder.zero + self._segmenter.offset

    def _resumed(self) -> None:
        """Data has come through a reconnection: its pending bookkeeping (`_resume`) runs now, once."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending()

    def _run_once(self) -> None:
        container, decoder = self._connect()
        self._info_ready.set()
        self.stats.health = Health.LIVE
        seg = Segmenter(self.source_id, decoder.video is not None, decoder.audio is not None)
        self._segmenter = seg
        try:  # a truncated or partly corrupt file: keep what decoded, say what happened
            if not self._pump(decoder, seg) and (short := decoder.check_length(self.info)):
                self.stats.warnings.append(short)
        except (av.error.FFmpegError, OSError) as exc:
            if self.stats.segments_emitted == 0 and seg.last_time == 0:
                raise BadInput(f"{self.spec.name}: cannot decode ({' '.join(str(exc).split())[:160]})") from None
            self.stats.warnings.append(f"decoding stopped early at {seg.last_time:.1f} s: {exc}")
        finally:
            self.stats.decode_errors += decoder.decode_errors
            container.close()
        for s in seg.flush(final=True):
            self._emit(s)
        if self.stats.segments_emitted == 0:
            raise BadInput(f"{self.spec.name}: no decodable audio or video")

    def _pump(self, decoder: MediaDecoder, seg: Segmenter) -> bool:
        """Decoded items into `seg` until the source ends (False), or a stop request or the duration limit (True)."""
        base, skipped, jumps = self.stats.frames_decoded, self.stats.frames_skipped, self.stats.clock_jumps
        items = iter(decoder)
        while True:
            t0 = time.perf_counter()
            item = next(items, _END)
            t1 = time.perf_counter()
            self.timings["decode_s"] += t1 - t0  # demux, decode, sampled RGB, audio resampling (and network waits)
            self.stats.frames_decoded = base + decoder.frames_decoded  # live count for progress and health (also
            self.stats.frames_skipped = skipped + decoder.frames_skipped  # the frames after the last sampled one)
            self.stats.clock_jumps = jumps + decoder.clock.jumps
            if item is _END:
                return False
            self._resumed()
            self._delivered = True
            self._last_data = (time.monotonic(), time.time())
            if self._stop.is_set():
                return True
            if self.duration_s is not None and item.time + seg.offset >= self.duration_s:  # no second past it
                seg.last_time = max(seg.last_time, self.duration_s)  # the source went on: the last second is whole
                if not self.spec.live:
                    self.stats.warnings.append(f"analysed the first {self.duration_s:g} s only: the file goes on "
                                               "past the duration limit (its header declared less, or nothing)")
                return True
            done = list(seg.push(item))
            self.timings["segment_s"] += time.perf_counter() - t1
            for s in done:
                self._emit(s)

    def _run_live(self) -> None:
        seg: Segmenter | None = None
        attempt = 0
        outage_started = time.monotonic()  # before the first data: since the first attempt
        lost_from = 0.0
        while not self._stop.is_set():
            self.stats.health = Health.RECONNECTING if self._delivered else Health.CONNECTING
            try:
                container, decoder = self._connect()
            except BadInput as exc:
                self.stats.last_error = str(exc)
                attempt += 1
                if not self._delivered and not self.policy.retry_before_data:
                    raise StreamFailed(f"{self.spec.name}: could not connect ({_reason(exc, self.spec)})") from None
                if time.monotonic() - outage_started > self.policy.outage_budget_s:
                    if not self._delivered:
                        raise StreamFailed(f"{self.spec.name}: did not come up within "
                                           f"{self.policy.outage_budget_s:g} s ({_reason(exc, self.spec)})") from None
                    return self._give_up(outage_started, lost_from)
                self._stop.wait(self.policy.delay(attempt - 1, self._rng))
                continue
            self._info_ready.set()
            self._pending = None
            if seg is None or not self._delivered:  # the first connection, or one before that sent no data
                seg = Segmenter(self.source_id, decoder.video is not None, decoder.audio is not None)
                self._segmenter = seg
                self.stats.health = Health.LIVE
            else:  # the same timeline across the outage, once data comes again: a silent camera is no reconnection
                self._pending = functools.partial(self._resume, seg, decoder, outage_started, lost_from)
            session = time.monotonic()
            reached = False  # stopped, or the duration limit
            try:
                reached = self._pump(decoder, seg)
                ended_cleanly = True
            except (av.error.FFmpegError, OSError, TimeoutError) as exc:
                self.stats.last_error = " ".join(str(exc).split())[:200]
                ended_cleanly = False
            finally:
                self.stats.decode_errors += decoder.decode_errors
                try:
                    container.close()
                except Exception:  # closing a broken network container can fail; nothing to recover
                    pass
                self._pending = None  # a session that brought nothing resumes nothing
            done = self._stop.is_set() or reached or (self.duration_s is not None and seg.last_time >= self.duration_s)
            for s in seg.flush(final=done):
                self._emit(s)
            if done:
                return self._close_outage(outage_started, lost_from)
            if ended_cleanly and self.stats.last_error is None:
                self.stats.last_error = "source ended"
            if not self._delivered and not self.policy.retry_before_data:
                raise StreamFailed(f"{self.spec.name}: connected but no data arrived ({self.stats.last_error})")
            if not self._delivered:
                if time.monotonic() - outage_started > self.policy.outage_budget_s:
                    raise StreamFailed(f"{self.spec.name}: sent no data within {self.policy.outage_budget_s:g} s "
                                       f"({self.stats.last_error})")
                self._stop.wait(self.policy.delay(0, self._rng))
            elif self._last_data[0] >= session:  # data came: the next outage starts at its last item
                attempt = 0
                lost_from = seg.last_time
                outage_started, self.stats.outage_since = self._last_data
            else:  # connected, and nothing came: the outage goes on, within its budget and with the backoff
                if time.monotonic() - outage_started > self.policy.outage_budget_s:
                    return self._give_up(outage_started, lost_from)
                attempt += 1
                self._stop.wait(self.policy.delay(attempt - 1, self._rng))
        self._close_outage(outage_started, lost_from)

    def _resume(self, seg: Segmenter, decoder: MediaDecoder, outage_started: float, lost_from: float) -> None:
        """Data again after an outage: skip the seconds that were lost on the same timeline. The outage runs from
        the last data to this first item (wall clock), not from when the loss was noticed (the watchdog)."""
        outage = time.monotonic() - outage_started
        resume = int(math.ceil(lost_from + outage))
        self.stats.lost_intervals.append((lost_from, lost_from + outage))
        self.stats.outage_since = None
        self.stats.reconnects += 1
        self.stats.health = Health.LIVE
        seg.reset_streams(decoder.video is not None, decoder.audio is not None)
        seg.skip_to(resume)
        seg.offset = float(resume)
        seg.last_time = float(resume)

    def _close_outage(self, outage_started: float, lost_from: float) -> None:
        """A stream that ends during an outage (stopped, or out of budget) reports it as lost up to the end."""
        if self._delivered and self.stats.outage_since is not None:
            self.stats.lost_intervals.append((lost_from, lost_from + time.monotonic() - outage_started))
            self.stats.outage_since = None

    def _give_up(self, outage_started: float, lost_from: float) -> None:
        self._close_outage(outage_started, lost_from)
        self.stats.failure = (f"stream stopped sending at {lost_from:.1f} s and did not come back "
                              f"within {self.policy.outage_budget_s:.0f} s")
        self.stats.health = Health.FAILED


def _reason(exc: BaseException, spec: SourceSpec) -> str:
    """The cause without the source's name repeated."""
    text = str(exc)
    prefix = f"{spec.name}: "
    return redact(text[len(prefix):] if text.startswith(prefix) else text, spec.uri)
