"""Live sources added and removed at run time, each a `Pipeline` of Ray actors with its own job row
(`StreamManager`, one per process: the REST API's, and the dashboard's shared by all its tabs).

A watcher thread per stream waits for the pipeline to end (stopped, or failed for good), saves the final
result and keeps the sink's last feed so a subscriber that is still connected receives every item.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path

from app.services.model_choice import check_models, with_models
from app.services.recordings import Retention, record_config
from app.services.row_retention import RowPruner
from app.services.stream_watches import check_watches, make_watchable
from models.errors import BadInput
from pipelines import AnalyzeOptions, Pipeline
from pipelines.media.detect_source import parse_detect_source
from pipelines.media.policy import GENERIC_REFUSAL, SourcePolicy, SourceRefused
from pipelines.media.redact import redact
from pipelines.media.sources import SourceKind, SourceSpec, parse_source
from pipelines.sinks.store import Store
from pipelines.stages.config import no_picture

TERMINAL = ("ended", "stopped", "failed")
log = logging.getLogger("foresight.streams")


def live_spec(source: str, rtsp_transport: str, not_live: str) -> SourceSpec:
    """The parsed live source (URL or device); BadInput with `not_live` for a file."""
    try:
        spec = parse_source(source, rtsp_transport, None)
    except OSError as exc:  # e.g. a name longer than the filesystem allows
        raise BadInput(f"cannot use this source ({exc.strerror or exc})") from None
    if spec.kind is SourceKind.FILE:
        raise BadInput(not_live)
    return spec


def start_pipeline(store: Store, source: str, options: AnalyzeOptions, job_id: str,
                   source_id: str | None = None, public_error: str | None = None) -> Pipeline:
    """A running pipeline whose rows go to job `job_id` (marked running, or failed if it cannot start; the
    job row then says `public_error` when given, else the reason)."""
    store.update_job(job_id, status="running")
    try:
        return Pipeline(source, options, job_id=job_id, db_path=str(store.path), source_id=source_id)
    except BaseException as exc:
        store.update_job(job_id, status="failed", error=public_error or redact(str(exc), source))
        raise


def shown_status(stream: LiveStream, stats: dict) -> str:
    """Its status for a row: "reconnecting" while a running stream's source is away (its health `stats`, from
    `StreamManager.health`, say since when in `outage_since` and why in `last_error`), else `stream.status`."""
    if stream.status == "running" and stats.get("health") == "reconnecting":
        return "reconnecting"
    return stream.status


class TooManyStreams(Exception):
    """`max_streams` live sources are running already."""


@dataclass
class LiveStream:
    id: str
    source: str
    job_id: str
    created_at: float
    pipeline: Pipeline | None = None
    status: str = "starting"
    error: str | None = None
    final_feed: list = field(default_factory=list)
    final_stats: dict | None = None
    watcher: threading.Thread | None = None
    stopping: bool = False
    options: AnalyzeOptions | None = None  # what it runs with (its watches, thresholds), for lists such as the UI's
    persistent: bool = False  # reconnected when the server restarts (its source is kept in the store)
    restarts: int = 0
    zones: list[str] = field(default_factory=list)  # as given (`--zone` syntax): kept for a restart
    lines: list[str] = field(default_factory=list)
    track: bool = False  # tracking on without zones or lines (zones may come later: `set_layout`)
    models: dict[str, str] = field(default_factory=dict)  # its own detector / pose, as asked: kept for a restart
    detect_source: str | None = None  # its sub-stream, analysed while the main one is recorded (kept, unredacted)
    refused: str | None = None  # why it was ended after it connected (a source it cannot analyse as asked)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def watches(self) -> list[str]:
        return list(self.options.grounding.standing) if self.options is not None else []

    def settings(self) -> dict:
        """What a persistent stream comes back with after a server restart."""
        return {"watches": self.watches, "zones": list(self.zones), "lines": list(self.lines), "track": self.track,
                "models": dict(self.models), "detect_source": self.detect_source}

    @property
    def recording(self) -> str | None:
        """The folder of its recording, if it is recorded: recording is on and its pipeline started on a live
        source (the ingest records only those). None while it starts, when it failed before it connected, and
        for a plain HTTP file: `GET /v1/jobs/{id}/clip` would have nothing to play."""
        record = self.options.record if self.options is not None else None
        pipe = self.pipeline
        return record.dir if record is not None and pipe is not None and pipe.spec.live else None


class StreamManager:
    """Registry of live streams; all calls are thread-safe."""

    def __init__(self, store: Store, db_path: str, options: AnalyzeOptions, max_streams: int,
                 policy: SourcePolicy | None = None, job_kind: str = "stream", recordings: Path | None = None,
                 retention: Retention | None = None):
        self.store = store
        self.job_kind = job_kind  # the dashboard's streams are "dashboard-live", the API's "stream"
        self.policy = policy
        self.db_path = db_path
        self.options = options
        self.max_streams = max_streams
        self.recordings, self.retention = recordings, retention  # each stream's ring under recordings/<job id>/
        self.streams: dict[str, LiveStream] = {}
        self._lock = threading.Lock()
        self._closing = False
        # A stream that ran when a previous server died (even `kill -9`) ends with a reason instead of staying
        # "running" forever; a persistent one is reconnected by `resume()` under a new job.
        persistent = {row["job_id"] for row in store.persistent_streams(job_kind)}
        for job_id in store.unfinished_job_ids(job_kind):
            store.update_job(job_id, status="failed", error="interrupted: the server stopped while the stream ran; "
                             + ("it was persistent and restarts under a new job" if job_id in persistent
                                else "add it again"))
        keep_days = retention.keep_days if retention is not None else 0  # what its streams wrote, kept this long
        self.pruner = RowPruner.start_for(store, job_kind, keep_days, recordings)

    def resume(self) -> list[LiveStream]:
        """Reconnect the persistent streams that were running when the last server stopped (same stream ids,
        new jobs); one whose source is refused now, or that finds no room, is logged and forgotten."""
        resumed = []
        for row in self.store.persistent_streams(self.job_kind):
            try:
                kept = row["settings"]
                resumed.append(self.add(row["source"], row["rtsp_transport"], persistent=True,
                                        stream_id=row["stream_id"], restarts=row["restarts"] + 1,
                                        watches=kept.get("watches"), zones=kept.get("zones"),
                                        lines=kept.get("lines"), track=bool(kept.get("track")),
                                        models=kept.get("models"), detect_source=kept.get("detect_source")))
            except (SourceRefused, BadInput, TooManyStreams) as exc:
                log.warning("persistent stream %s not restarted: %s", row["stream_id"],
                            redact(getattr(exc, "reason", None) or str(exc), row["source"]))
                self.store.forget_stream(row["stream_id"])
        return resumed

    def add(self, source: str, rtsp_transport: str | None = None, options: AnalyzeOptions | None = None,
            persistent: bool = False, stream_id: str | None = None, restarts: int = 0,
            watches: list[str] | None = None, zones: list[str] | None = None,
            lines: list[str] | None = None, track: bool = False, models: dict[str, str] | None = None,
            detect_source: str | None = None) -> LiveStream:
        """Accept a live URL or device and connect in the background (the stream starts as "starting").
        A `persistent` stream is reconnected after a server restart (`resume`) until it is removed or ends.

        With a `policy` (API callers), the source must pass it: SourceRefused (one generic message) for local
        paths, other schemes and hosts outside the allowed networks, checked here after DNS resolution and
        again on every redirect and playlist hop in the background. BadInput for a source that does not parse.
        Refused sources leave no rows in the store; rows are written once the source passed every check.
        `models` (detector, pose) replace the manager's for this stream; an unknown name is BadInput. A
        `detect_source` (the camera's sub-stream, analysed while `source` is recorded) passes the same checks.
        """
        models = check_models(models or {})
        options = with_models(AnalyzeOptions(**{**(options or self.options).__dict__}), models)  # per stream
        options.reconnect = self.options.reconnect  # every camera of this manager reconnects as it says (forever)
        if restarts:  # a persistent camera that is down when the server comes back (a power cut) is waited for
            options.reconnect = replace(options.reconnect, retry_before_data=True)
        standing = options.grounding.standing if watches is None else watches
        options.grounding = replace(options.grounding, standing=check_watches(standing))
        make_watchable(options)
        options.stages = replace(options.stages, keep_picture=True)  # live views draw boxes on their own picture
        if zones or lines or track:  # tracking with these zones and lines (checked as the CLI's flags are)
            from app.services.track_settings import enable_tracking
            from models.zones import parse_layout

            enable_tracking(options, *parse_layout(zones, lines))
        if rtsp_transport is not None:
            options.rtsp_transport = rtsp_transport
        if self.policy is not None:
            for url in (source, detect_source) if detect_source else (source,):
                self.policy.check_source_quick(url)
            options.source_policy = self.policy  # and every connection the ingest makes is checked and pinned
        spec = live_spec(source, options.rtsp_transport, "a stream needs a URL (rtsp://, http(s)://) or a "
                         "/dev/videoN device; upload files to /v1/analyze")
        options.detect_source = detect_source or None
        # A plain HTTP camera is known to be live only once the pipeline has opened it (`settle_live`), which
        # checks the detect stream again then; here it may be one.
        maybe_live = replace(spec, live=True) if spec.kind is SourceKind.HTTP else spec
        detect = parse_detect_source(options.detect_source, maybe_live, options.rtsp_transport, what="detect_source")
        with self._lock:
            if self._unfinished() >= self.max_streams:
                raise TooManyStreams(f"{self.max_streams} stream{'s are' if self.max_streams != 1 else ' is'} "
                                     "running already (the limit)")
            sid = stream_id or uuid.uuid4().hex[:12]
            job_id = f"stream-{sid}" + (f"-r{restarts}" if restarts else "")
            if self.recordings is not None and self.retention is not None:
                running = {s.job_id for s in self.streams.values() if not s.terminal}
                options.record = record_config(self.recordings, job_id, self.retention, running)
            stream = LiveStream(sid, spec.name, job_id=job_id, created_at=time.time(), options=options,
                                persistent=persistent, restarts=restarts, zones=list(zones or []),
                                lines=list(lines or []), track=bool(track or zones or lines), models=models,
                                detect_source=detect.uri if detect is not None else None)
            self.streams[sid] = stream
        stream.watcher = threading.Thread(target=self._run, args=(stream, source, spec, options),
                                          name=f"stream-{sid}", daemon=True)
        stream.watcher.start()
        return stream

    def _run(self, stream: LiveStream, source: str, spec: SourceSpec, options: AnalyzeOptions) -> None:
        """The stream's thread: final policy checks, connect, then watch until the pipeline ends."""
        try:
            if self.policy is not None:
                source = self.policy.check_source(source)
                if options.detect_source:
                    options.detect_source = self.policy.check_source(options.detect_source)
            if stream.stopping:
                raise SourceRefused("stopped before it started")
            self.store.add_source(redact(spec.uri), spec.kind.value, source_id=stream.id)
            self.store.create_job(self.job_kind, spec.name, job_id=stream.job_id)
            if stream.persistent:
                self.store.remember_stream(stream.id, self.job_kind, source, options.rtsp_transport, stream.job_id,
                                           stream.restarts, stream.settings())
            stream.pipeline = start_pipeline(self.store, source, options, stream.job_id, source_id=stream.id,
                                             public_error=GENERIC_REFUSAL if self.policy is not None else None)
        except BaseException as exc:
            reason = getattr(exc, "reason", None) or str(exc)
            log.warning("stream %s (%s) did not start: %s", stream.id, spec.name, redact(reason, source))
            stream.error = (GENERIC_REFUSAL if self.policy is not None or isinstance(exc, SourceRefused)
                            else redact(str(exc), source))
            stream.status = "stopped" if stream.stopping else "failed"
            if stream.persistent and not self._closing:
                self.store.forget_stream(stream.id)
            return
        stream.status = "running"
        if stream.stopping:
            stream.pipeline.stop()
        elif stream.track:
            self._refuse_without_picture(stream)
        self._watch(stream)

    @staticmethod
    def _refuse_without_picture(stream: LiveStream) -> None:
        """Tracking, zones and lines need a picture: a source found to have none (an audio-only stream) is
        ended with that reason, as the CLI refuses such a file."""
        try:
            info = stream.pipeline.info(timeout=30)
        except Exception:  # not connected yet (a late camera): the tracker simply gets no frames
            return
        if info is not None and not info.get("has_video"):
            stream.refused = no_picture(stream.source)
            stream.pipeline.stop()

    def _watch(self, stream: LiveStream) -> None:
        pipe = stream.pipeline
        status, error = "ended", None
        try:
            result = pipe.wait()
            stream.final_stats = result.get("ingest")
            error = stream.refused or (result.get("ingest") or {}).get("failure")
            status = "failed" if error else ("stopped" if stream.stopping else "ended")
            self.store.save_result(stream.job_id, result, status="stopped" if status == "stopped" else "done",
                                   rows_written=True)  # (its sink wrote every row as it closed)
        except Exception as exc:
            status, error = "failed", str(exc)
        if error:
            log.warning("stream %s (%s) failed: %s", stream.id, stream.source, redact(error))
            if self.policy is not None and not stream.refused:  # API callers learn that it failed, not what was found
                error = GENERIC_REFUSAL
            self.store.update_job(stream.job_id, status="failed", error=error)
        try:  # keep what the sink holds, then publish the terminal status (feed readers switch over on it)
            stream.final_feed = pipe.feed(0, timeout=10)
        except Exception:
            stream.final_feed = []
        stream.error, stream.status = error, status
        if stream.persistent and not self._closing:  # removed, or ended for good: not reconnected next time
            self.store.forget_stream(stream.id)
        pipe.close()

    def get(self, sid: str) -> LiveStream | None:
        with self._lock:
            return self.streams.get(sid)

    def list(self) -> list[LiveStream]:
        with self._lock:
            return list(self.streams.values())

    def unfinished(self) -> int:
        """How many streams are still starting or running (what a page refreshing while any is live asks)."""
        with self._lock:
            return self._unfinished()

    def _unfinished(self) -> int:  # the caller holds the lock
        return sum(not s.terminal for s in self.streams.values())

    def remove(self, sid: str, timeout: float = 30.0) -> LiveStream | None:
        """Stop a stream, wait for its final result to be saved, and forget it."""
        stream = self.get(sid)
        if stream is None:
            return None
        if not stream.terminal:
            stream.stopping = True  # a stream still starting stops as soon as its pipeline exists
            if stream.pipeline is not None:
                stream.pipeline.stop()
        if stream.watcher is not None:
            stream.watcher.join(timeout)
        with self._lock:
            self.streams.pop(sid, None)
        return stream

    def set_watches(self, sid: str, watches: list[str]) -> LiveStream | None:
        """Replace a running stream's standing queries (None if there is no such stream); BadInput when it is
        not running or runs without the grounding model. A watch kept keeps what it has fired."""
        stream = self.get(sid)
        if stream is None:
            return None
        watches = check_watches(watches)
        if stream.status != "running" or stream.pipeline is None:
            raise BadInput(f"the stream is {stream.status}; watches change only while it runs")
        stream.pipeline.set_watches(watches)
        stream.options.grounding = replace(stream.options.grounding, standing=watches)
        if stream.persistent:  # a restarted server brings the stream back with these watches
            self.store.update_stream_settings(stream.id, stream.settings())
        return stream

    def set_layout(self, sid: str, zones: list[str], lines: list[str]) -> LiveStream | None:
        """Replace a running stream's zones and lines (None if there is no such stream); BadInput when they do
        not parse, when it is not running, or when it runs without tracking. Tracks and counts go on."""
        from models.zones import parse_layout

        stream = self.get(sid)
        if stream is None:
            return None
        parsed = parse_layout(zones, lines)
        if stream.status != "running" or stream.pipeline is None:
            raise BadInput(f"the stream is {stream.status}; zones change only while it runs")
        stream.pipeline.set_layout(*parsed)
        stream.options.stages = replace(stream.options.stages, zones=parsed[0], lines=parsed[1])
        stream.zones, stream.lines = list(zones), list(lines)
        if stream.persistent:
            self.store.update_stream_settings(stream.id, stream.settings())
        return stream

    def feed(self, stream: LiveStream, since: int) -> list:
        """Feed items after sequence number `since`: from the live sink, or what it held when the stream ended."""

        if stream.terminal or stream.pipeline is None:
            return [item for item in stream.final_feed if item[0] > since]
        try:
            return stream.pipeline.feed(since, timeout=10)
        except Exception:
            return [item for item in stream.final_feed if item[0] > since]

    def picture(self, stream: LiveStream) -> dict | None:
        """The latest analysed picture of a running stream with its own boxes (`Sink.picture`), else None."""
        if stream.terminal or stream.pipeline is None:
            return None
        try:
            return stream.pipeline.picture(timeout=5)
        except Exception:
            return None

    def health(self, stream: LiveStream) -> dict:
        """Ingest counters and the sink's per-second end-to-end latencies (for /metrics and the API)."""

        if stream.terminal or stream.pipeline is None:
            return {"stats": stream.final_stats or {}, "latencies": []}
        try:
            prog = stream.pipeline.progress(timeout=5)
            lat = stream.pipeline.latencies(timeout=5)
        except Exception as exc:
            return {"stats": {"health": "unknown", "last_error": str(exc)}, "latencies": []}
        return {"stats": prog["stats"], "position": prog["position"], "latencies": lat[-300:]}

    def close(self) -> None:
        """Stop every stream; persistent ones stay remembered, so the next server reconnects them."""
        self._closing = True
        for stream in self.list():
            self.remove(stream.id, timeout=10)
        if self.pruner is not None:
            self.pruner.close()
