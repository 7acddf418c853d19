"""A camera's low-resolution sub-stream for the analysis, its main stream for the recording (Frigate's detect and
record roles): `--detect-source URL`, `detect_source` in `POST /v1/streams`.

`SplitReader` is a `SegmentReader` on the detect stream (pictures and, when the sub-stream carries it, sound:
every stage reads the same small stream, so one decoder and one clock feed the analysis) whose recording comes
from a second connection, to the main stream, that is only demuxed and remuxed (`MainRecording`), never decoded.
Boxes stay right on the main picture because they are drawn in the analysed frame's `frame_size` and scaled to
the picture they are drawn on (`ui/picture.py`).

Each stream keeps its own timeline from its first packet, continued across its outages by the wall clock (as the
ingest does), so the two agree within the difference of their start-up (milliseconds on a LAN). An outage of one
stream never stops the other: the analysis reconnects as any live source does, the recording on its own with the
same backoff, for as long as the analysis runs.
"""

from __future__ import annotations

import random
import threading
import time

import av

from models.errors import BadInput
from pipelines.media.decode import ContinuousClock
from pipelines.media.ingest import SegmentReader
from pipelines.media.ingest_stats import ReconnectPolicy
from pipelines.media.policy import SourcePolicy
from pipelines.media.recorder import RecordConfig, Recorder
from pipelines.media.redact import redact
from pipelines.media.sources import SourceKind, SourceSpec, media_streams, open_container, parse_source

DEFAULT_PORTS = {"rtsp": 554, "rtsps": 322, "http": 80, "https": 443, "rtmp": 1935}


def same_source(a: str, b: str) -> bool:
    """Whether two URLs name the same stream as a client would reach it: scheme and host in any case, a default
    port written out or left out (`RTSP://Cam:554/live` is `rtsp://cam/live`)."""
    from urllib.parse import urlsplit

    def key(url: str) -> tuple:
        p = urlsplit(url.strip())
        scheme = p.scheme.lower()
        try:
            port = p.port or DEFAULT_PORTS.get(scheme)
        except ValueError:  # a port that is no number: only the text can say
            return (url.strip(),)
        return scheme, p.username, p.password, (p.hostname or "").lower(), port, p.path or "/", p.query

    return key(a) == key(b)


def parse_detect_source(uri: str | None, main: SourceSpec, rtsp_transport: str = "tcp",
                        guard: SourcePolicy | None = None, what: str = "--detect-source") -> SourceSpec | None:
    """The detect stream's spec (None without one), parsed as the main source is and under the same `guard`;
    BadInput naming `what` for a main source that is not live, a detect source that is a file or folder, or
    the main source itself."""
    if uri is None or not uri.strip():
        return None
    if main.kind is SourceKind.FILE or not main.live:
        raise BadInput(f"{what} needs a live main source (a camera URL or device), not a file")
    if same_source(uri, main.uri):
        raise BadInput(f"{what} is the main source itself; give the camera's low-resolution sub-stream")
    try:
        spec = parse_source(uri, rtsp_transport, True, guard)
    except OSError as exc:
        raise BadInput(f"{what}: not a usable source ({exc.strerror or exc})") from None
    except BadInput as exc:
        raise BadInput(f"{what}: {exc}") from None
    if spec.kind is SourceKind.FILE:
        raise BadInput(f"{what} must be a live URL or device (the camera's sub-stream), not a file")
    return spec


class MainRecording:
    """Records `spec` (the main stream) on a thread of its own: demux, then the `Recorder`'s remux; reconnects
    with `policy`'s backoff until `stop()`, however long the main stream is away."""

    def __init__(self, spec: SourceSpec, record: RecordConfig, policy: ReconnectPolicy | None = None,
                 open_timeout_s: float = 10.0, watchdog_s: float = 5.0, seed: int | None = None):
        self.spec = spec
        self.recorder = Recorder(record)
        self.policy = policy or ReconnectPolicy()
        self.open_timeout_s, self.watchdog_s = open_timeout_s, watchdog_s
        self.health = "connecting"
        self.reconnects = 0
        self.last_error: str | None = None
        self.has_audio: bool | None = None  # known once connected
        self._anchor: float | None = None  # wall clock (epoch s) of the first packet: stream time 0
        self._stop = threading.Event()
        self._rng = random.Random(seed)
        self._thread = threading.Thread(target=self._run, name=f"record-{spec.name}", daemon=True)

    def start(self) -> MainRecording:
        self._thread.start()
        return self

    def stop(self) -> None:
        """End the recording (within the watchdog's read timeout) and close its last segment."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(self.watchdog_s + self.open_timeout_s + 2)

    def stats(self) -> dict:
        return {**self.recorder.stats(), "source": self.spec.name, "health": self.health,
                "reconnects": self.reconnects, "last_error": redact(self.last_error)}

    def _run(self) -> None:
        attempt = 0
        try:
            while not self._stop.is_set():
                try:
                    container = open_container(self.spec, self.open_timeout_s, self.watchdog_s)
                except BadInput as exc:
                    self.last_error = str(exc)
                    self.health = "reconnecting" if self._anchor is not None else "connecting"
                    self._stop.wait(self.policy.delay(attempt, self._rng))
                    attempt += 1
                    continue
                try:
                    if self._record(container):
                        attempt = 0
                finally:
                    try:
                        container.close()
                    except Exception:  # closing a broken network container can fail; nothing to recover
                        pass
                if not self._stop.is_set():
                    self.health = "reconnecting"
                    self._stop.wait(self.policy.delay(attempt, self._rng))
                    attempt += 1
        finally:
            self.recorder.close()
            self.health = "ended"

    def _record(self, container) -> bool:
        """Remux one connection's packets until it ends, stalls or `stop()`; True if any packet arrived."""
        streams = [s for s in media_streams(container) if s is not None]
        if not streams:
            self.last_error = f"{self.spec.name}: no video or audio stream"
            return False
        self.has_audio = bool(container.streams.audio)
        zero: list[float] = []  # this connection's first packet time, and its offset on the stream's timeline

        def clock(t: float) -> float | None:
            if not zero:
                now = time.time()
                self._anchor = now if self._anchor is None else self._anchor
                zero.extend((t, now - self._anchor))
            return t - zero[0] + zero[1]

        self.recorder.connect(streams, clock)
        continuous = ContinuousClock(container, self.spec.live)  # a TS or HLS main stream whose clock jumps
        got = False
        try:
            for packet in container.demux(streams):
                if self._stop.is_set():
                    break
                if packet.pts is None or packet.size == 0:
                    continue
                continuous.mend(packet)
                if not got:
                    got, self.health = True, "live"
                    self.reconnects += self._anchor is not None
                self.recorder.write(packet)
            else:
                self.last_error = "source ended"
        except (av.error.FFmpegError, OSError, TimeoutError) as exc:
            self.last_error = " ".join(str(exc).split())[:200]
        return got


class SplitReader(SegmentReader):
    """A `SegmentReader` that analyses `detect` while `MainRecording` records `spec` (with `record`)."""

    def __init__(self, spec: SourceSpec, detect: SourceSpec, source_id: str, record: RecordConfig | None = None,
                 **kwargs):
        super().__init__(detect, source_id, record=None, **kwargs)
        self.main = (MainRecording(spec, record, self.policy, self.open_timeout_s, self.watchdog_s)
                     if record is not None else None)
        self._audio_checked = False

    def start(self) -> SplitReader:
        if self.main is not None:
            self.main.start()
        super().start()
        return self

    def _emit(self, seg) -> None:
        if self.main is not None:
            self.stats.recording = self.main.stats()
            if not self._audio_checked and self.main.has_audio is not None and self.info is not None:
                self._audio_checked = True
                if self.main.has_audio and not self.info.has_audio:
                    self.stats.warnings.append("the detect stream has no sound: sound is not analysed "
                                               "(the main stream's recording keeps it)")
        super()._emit(seg)

    def _finish(self, error: BaseException | None = None) -> None:
        if self.main is not None:  # the recording ends with the analysis, before the consumer sees the end
            self.main.stop()
            self.stats.recording = self.main.stats()
        super()._finish(error)


def make_reader(spec: SourceSpec, source_id: str, detect: SourceSpec | None = None, **kwargs) -> SegmentReader:
    """The reader of a source: a plain `SegmentReader`, or a `SplitReader` when a detect stream is given."""
    if detect is None:
        return SegmentReader(spec, source_id, **kwargs)
    return SplitReader(spec, detect, source_id, **kwargs)
