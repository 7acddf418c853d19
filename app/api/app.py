"""`create_app(settings)`: builds the FastAPI app; Ray, the store and the managers start in its lifespan."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sqlite3
import threading
import time
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from app.api import access_log, guards
from app.api.context import Services
from app.api.guards import BodyLimits
from app.api.head import HeadAsGet
from app.api.hosts import JSONTrustedHost
from app.api.metrics import Metrics
from app.api.routers import jobs, review, search, streams, system
from app.services.disk import no_space_reason
from app.services.jobs import JobManager, NoSpace
from app.services.search import SearchService, TextMatcher
from app.services.settings import Settings
from app.services.streams import StreamManager
from app.services.uploads import capped, private_dir
from pipelines.sinks.store import Store


def _hook_stop_signals(stopping: asyncio.Event) -> None:
    """Set `stopping` on SIGTERM and SIGINT, then run the handler that was there (uvicorn's graceful shutdown).
    Uvicorn waits for open connections to close before the lifespan's shutdown, and an SSE feed closes only once
    its stream ended: without this both wait until uvicorn's graceful timeout cancels the feeds, with an error."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        previous = signal.getsignal(sig)

        def handler(signum: int, frame: object, previous: object = previous) -> None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nothing is left to tell
                loop.call_soon_threadsafe(stopping.set)
            if callable(previous):
                previous(signum, frame)

        signal.signal(sig, handler)


async def _stop_streams_when(stopping: asyncio.Event, stream_manager: StreamManager) -> None:
    """Once the server is told to stop, stop the streams at once (their results are saved as `stopped`), so their
    SSE feeds send `event: end` and close while uvicorn waits for the connections."""
    await stopping.wait()
    await asyncio.to_thread(stream_manager.close)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    access_log.install()  # no credentials from request paths in the logs

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        store = Store(settings.db_path)
        private_dir(settings.upload_dir)
        job_manager = JobManager(store, settings.db_path, capped(settings.options, settings.max_duration_s),
                                 settings.max_queue, settings.parallel,
                                 settings.keep_uploads, settings.grounder_checkpoint, settings.upload_dir)
        stream_manager = StreamManager(store, str(settings.db_path), settings.stream_options or settings.options,
                                       settings.max_streams, policy=settings.source_policy,
                                       recordings=settings.recordings_dir, retention=settings.retention)
        metrics = Metrics(job_manager, stream_manager)
        job_manager.on_finish = lambda status, seconds: metrics.job_seconds.observe(seconds)
        app.state.services = Services(settings, store, job_manager, stream_manager,
                                      SearchService(store, job_manager.grounder), metrics)
        app.state.stopping = stopping = asyncio.Event()  # set when the server is told to stop: SSE feeds end
        on_term = signal.getsignal(signal.SIGTERM)  # uvicorn's graceful shutdown
        job_manager.start()
        stream_manager.resume()  # persistent streams that ran when the last server stopped
        early_stop = None
        if threading.current_thread() is threading.main_thread() and on_term is not None:
            signal.signal(signal.SIGTERM, on_term)  # ray.init put its sys.exit(15) there: SIGTERM is a clean stop
            _hook_stop_signals(stopping)
            early_stop = asyncio.create_task(_stop_streams_when(stopping, stream_manager))
        # Load the search encoder now rather than on the first query (seconds on a small machine).
        threading.Thread(target=lambda: TextMatcher.encoder().encode("warm up"), daemon=True).start()
        try:
            yield
        finally:
            if early_stop is not None and stopping.is_set():
                with contextlib.suppress(Exception):  # it failed: the close below stops what is left
                    await early_stop
            elif early_stop is not None:
                early_stop.cancel()
            stopping.set()
            stream_manager.close()
            job_manager.close()
            store.close()

    app = FastAPI(title="Foresight", version="1", lifespan=lifespan,
                  description="Streaming multimodal video analysis: upload clips, follow live streams, search.")

    @app.middleware("http")
    async def observe(request: Request, call_next):
        started = time.perf_counter()
        services = getattr(request.app.state, "services", None)

        def record(status: int) -> None:  # labels are bounded: known methods and declared routes only
            path = getattr(request.scope.get("route"), "path", "other")
            if services is not None and not (path.endswith("/events") and status == 200):
                services.metrics.requests.labels(guards.method_label(request.method), path, str(status)).observe(
                    time.perf_counter() - started)
                if status >= 500:
                    services.metrics.server_errors.inc()

        try:
            response = await call_next(request)
        except Exception:
            record(500)
            raise
        record(response.status_code)
        return response

    async def no_space(request: Request, exc: Exception) -> JSONResponse:
        """A full disk or database is 507 with the reason (and /healthz says degraded), never a bare 500."""
        reason = str(exc) if isinstance(exc, NoSpace) else no_space_reason(exc)
        if reason is None:
            return JSONResponse({"detail": "internal error"}, status_code=500)
        disk = getattr(getattr(request.app.state.services, "jobs", None), "disk", None)
        if disk is not None and not isinstance(exc, NoSpace):
            disk.failed(reason)
        return JSONResponse({"detail": reason}, status_code=507)

    for kind in (NoSpace, sqlite3.OperationalError, OSError):
        app.add_exception_handler(kind, no_space)
    guards.install(app)
    app.add_middleware(BodyLimits, max_bytes=settings.max_json_bytes, timeout_s=settings.body_timeout_s,
                       api_key=settings.api_key, upload_paths=("/v1/analyze",))
    if settings.trusted_hosts:
        app.add_middleware(JSONTrustedHost, allowed_hosts=list(settings.trusted_hosts))
    app.add_middleware(HeadAsGet)  # outermost: HEAD passes every check a GET does

    for module in (system, jobs, streams, search, review):
        app.include_router(module.router)
    return app
