"""Live sources added and removed at run time, each a `Pipeline` of Ray actors with its own job row
(`StreamManager` for the REST API; the dashboard starts and stops one with `start_live` / `stop_live`).

A watcher thread per stream waits for the pipeline to end (stopped, or failed for good), saves the final
result and keeps the sink's last feed so a subscriber that is still connected receives every item.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field

from models.errors import BadInput
from pipelines import AnalyzeOptions, Pipeline
from pipelines.media.sources import SourceKind, SourceSpec, parse_source
from pipelines.sinks.store import Store

TERMINAL = ("ended", "stopped", "failed")


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
                   source_id: str | None = None) -> Pipeline:
    """A running pipeline whose rows go to job `job_id` (marked running, or failed if it cannot start)."""
    store.update_job(job_id, status="running")
    try:
        return Pipeline(source, options, job_id=job_id, db_path=str(store.path), source_id=source_id)
    except BaseException as exc:
        store.update_job(job_id, status="failed", error=str(exc))
        raise


def start_live(store: Store, source: str, rtsp_transport: str = "tcp",
               options: AnalyzeOptions | None = None) -> tuple[Pipeline, str]:
    """The dashboard's live view: start a pipeline on a URL or device; returns it and its job id."""
    from pipelines.spine.runtime import ensure_ray_in_keeper_thread

    options = options or AnalyzeOptions()
    options.rtsp_transport = rtsp_transport
    spec = live_spec(source, rtsp_transport, "live view takes a URL (rtsp://, http(s)://) or a /dev/videoN device")
    ensure_ray_in_keeper_thread()
    job_id = store.create_job("dashboard-live", spec.name)
    return start_pipeline(store, source, options, job_id), job_id


def stop_live(store: Store, pipeline: Pipeline, job_id: str) -> dict | None:
    """Stop a live pipeline and save its result; returns the result (None if the stream had failed)."""
    pipeline.stop()
    try:
        result = pipeline.wait()
        store.save_result(job_id, result)
        return result
    except Exception as exc:
        store.update_job(job_id, status="failed", error=str(exc))
        return None
    finally:
        pipeline.close()


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

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL


class StreamManager:
    """Registry of live streams; all calls are thread-safe."""

    def __init__(self, store: Store, db_path: str, options: AnalyzeOptions, max_streams: int):
        self.store = store
        self.db_path = db_path
        self.options = options
        self.max_streams = max_streams
        self.streams: dict[str, LiveStream] = {}
        self._lock = threading.Lock()

    def add(self, source: str, rtsp_transport: str | None = None) -> LiveStream:
        """Start a pipeline on a live URL or device; raises BadInput for anything else."""
        options = AnalyzeOptions(**{**self.options.__dict__})
        if rtsp_transport is not None:
            options.rtsp_transport = rtsp_transport
        spec = live_spec(source, options.rtsp_transport, "a stream needs a URL (rtsp://, http(s)://) or a "
                         "/dev/videoN device; upload files to /v1/analyze")
        with self._lock:
            if sum(not s.terminal for s in self.streams.values()) >= self.max_streams:
                raise TooManyStreams(f"{self.max_streams} streams are running already")
            sid = uuid.uuid4().hex[:12]
            stream = LiveStream(sid, spec.name, job_id=f"stream-{sid}", created_at=time.time())
            self.streams[sid] = stream
        self.store.add_source(spec.uri, spec.kind.value, source_id=sid)
        self.store.create_job("stream", spec.name, job_id=stream.job_id)
        try:
            stream.pipeline = start_pipeline(self.store, source, options, stream.job_id, source_id=sid)
        except BaseException as exc:
            stream.status, stream.error = "failed", str(exc)
            with self._lock:
                self.streams.pop(sid, None)
            raise
        stream.status = "running"
        stream.watcher = threading.Thread(target=self._watch, args=(stream,), name=f"stream-{sid}", daemon=True)
        stream.watcher.start()
        return stream

    def _watch(self, stream: LiveStream) -> None:

        pipe = stream.pipeline
        status, error = "ended", None
        try:
            result = pipe.wait()
            stream.final_stats = result.get("ingest")
            error = (result.get("ingest") or {}).get("failure")
            self.store.save_result(stream.job_id, result)
            status = "failed" if error else ("stopped" if stream.stopping else "ended")
        except Exception as exc:
            status, error = "failed", str(exc)
        if error:
            self.store.update_job(stream.job_id, status="failed", error=error)
        try:  # keep what the sink holds, then publish the terminal status (feed readers switch over on it)
            stream.final_feed = pipe.feed(0, timeout=10)
        except Exception:
            stream.final_feed = []
        stream.error, stream.status = error, status
        pipe.close()

    def get(self, sid: str) -> LiveStream | None:
        with self._lock:
            return self.streams.get(sid)

    def list(self) -> list[LiveStream]:
        with self._lock:
            return list(self.streams.values())

    def remove(self, sid: str, timeout: float = 30.0) -> LiveStream | None:
        """Stop a stream, wait for its final result to be saved, and forget it."""
        stream = self.get(sid)
        if stream is None:
            return None
        if not stream.terminal and stream.pipeline is not None:
            stream.stopping = True
            stream.pipeline.stop()
        if stream.watcher is not None:
            stream.watcher.join(timeout)
        with self._lock:
            self.streams.pop(sid, None)
        return stream

    def feed(self, stream: LiveStream, since: int) -> list:
        """Feed items after sequence number `since`: from the live sink, or what it held when the stream ended."""

        if stream.terminal or stream.pipeline is None:
            return [item for item in stream.final_feed if item[0] > since]
        try:
            return stream.pipeline.feed(since, timeout=10)
        except Exception:
            return [item for item in stream.final_feed if item[0] > since]

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
        for stream in self.list():
            self.remove(stream.id, timeout=10)
