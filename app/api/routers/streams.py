"""Live streams: add (`POST /v1/streams`), list, inspect, remove, and their server-sent events feed."""

from __future__ import annotations

import asyncio
import logging
import re
import time

from fastapi import APIRouter, Depends, Header, HTTPException, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from app.api.context import Services, require_api_key, services
from app.api.schemas import BODY_REFUSALS, LayoutUpdate, Problem, StreamCreate, StreamInfo, WatchesUpdate
from app.api.sse import comment, feed_item_frames, frame
from app.services.streams import LiveStream, TooManyStreams, shown_status
from models.errors import BadInput
from pipelines.media.policy import GENERIC_REFUSAL, SourceRefused
from pipelines.media.redact import redact

log = logging.getLogger("foresight.api")

# On shutdown a feed waits this long for its stream's end, under uvicorn's graceful timeout (10 s, app/server.py),
# which would otherwise cancel it with an error
SHUTDOWN_END_S = 8.0

router = APIRouter(prefix="/v1/streams", tags=["streams"], dependencies=[Depends(require_api_key)])


def _info(stream: LiveStream, health: dict | None = None) -> StreamInfo:
    stats = (health or {}).get("stats", {})
    stages = stream.options.stages if stream.options is not None else None
    return StreamInfo(id=stream.id, source=stream.source, job_id=stream.job_id, status=shown_status(stream, stats),
                      error=stream.error, created_at=stream.created_at, persistent=stream.persistent, health=stats,
                      events_url=f"/v1/streams/{stream.id}/events", watches=stream.watches,
                      zones=stream.zones, lines=stream.lines, track=stream.track, recorded=stream.recording is not None,
                      detector=getattr(stages, "detector", None), pose=getattr(stages, "pose", None),
                      detect_source=redact(stream.detect_source) if stream.detect_source else None)


def _get(svc: Services, stream_id: str) -> LiveStream:
    stream = svc.streams.get(stream_id)
    if stream is None:
        raise HTTPException(404, "no such stream")
    return stream


@router.post("", status_code=202, response_model=StreamInfo,
             responses={400: {"model": Problem}, 429: {"model": Problem}, **BODY_REFUSALS},
             summary="Start analysing a live source (connects in the background; status starts as 'starting')")
def add_stream(body: StreamCreate, svc: Services = Depends(services)) -> StreamInfo:
    try:
        stream = svc.streams.add(body.source, body.rtsp_transport, persistent=body.persistent,
                                 watches=body.watches or None, zones=body.zones, lines=body.lines,
                                 track=body.track, models=body.models(), detect_source=body.detect_source)
    except SourceRefused as exc:
        log.info("stream source refused: %s", exc.reason)
        raise HTTPException(400, GENERIC_REFUSAL) from None
    except BadInput:
        raise HTTPException(400, GENERIC_REFUSAL) from None
    except TooManyStreams as exc:
        raise HTTPException(429, str(exc)) from None
    return _info(stream)


@router.get("", response_model=list[StreamInfo], summary="Streams and their health")
def list_streams(svc: Services = Depends(services)) -> list[StreamInfo]:
    return [_info(s, svc.streams.health(s)) for s in svc.streams.list()]


@router.get("/{stream_id}", response_model=StreamInfo, responses={404: {"model": Problem}})
def get_stream(stream_id: str, svc: Services = Depends(services)) -> StreamInfo:
    stream = _get(svc, stream_id)
    return _info(stream, svc.streams.health(stream))


@router.delete("/{stream_id}", response_model=StreamInfo, responses={404: {"model": Problem}},
               summary="Stop a stream; its result is saved under its job_id")
def remove_stream(stream_id: str, svc: Services = Depends(services)) -> StreamInfo:
    stream = svc.streams.remove(stream_id)
    if stream is None:
        raise HTTPException(404, "no such stream")
    return _info(stream, {"stats": stream.final_stats or {}})


@router.put("/{stream_id}/watches", response_model=StreamInfo,
            responses={400: {"model": Problem}, 404: {"model": Problem}, 409: {"model": Problem}, **BODY_REFUSALS},
            summary="Replace a running stream's standing queries (watches); they are checked from its next second")
def set_watches(stream_id: str, body: WatchesUpdate, svc: Services = Depends(services)) -> StreamInfo:
    try:
        stream = svc.streams.set_watches(stream_id, body.watches)
    except BadInput as exc:
        raise HTTPException(409, str(exc)) from None
    if stream is None:
        raise HTTPException(404, "no such stream")
    return _info(stream, svc.streams.health(stream))


@router.put("/{stream_id}/zones", response_model=StreamInfo,
            responses={400: {"model": Problem}, 404: {"model": Problem}, 409: {"model": Problem}, **BODY_REFUSALS},
            summary="Replace a tracking stream's zones and lines; tracks and counts go on, from its next second")
def set_zones(stream_id: str, body: LayoutUpdate, svc: Services = Depends(services)) -> StreamInfo:
    try:
        stream = svc.streams.set_layout(stream_id, body.zones, body.lines)
    except BadInput as exc:
        raise HTTPException(409, str(exc)) from None
    if stream is None:
        raise HTTPException(404, "no such stream")
    return _info(stream, svc.streams.health(stream))


@router.get("/{stream_id}/events", responses={200: {"content": {"text/event-stream": {}}}, 404: {"model": Problem}},
            response_class=StreamingResponse, summary="Server-sent events: event, transcript, alert, moment, tick")
async def stream_events(stream_id: str, request: Request, svc: Services = Depends(services),
                        last_event_id: str | None = Header(None)) -> StreamingResponse:
    stream = _get(svc, stream_id)
    since = int(last_event_id) if last_event_id and re.fullmatch(r"[0-9]{1,18}", last_event_id) else 0

    stopping: asyncio.Event | None = getattr(request.app.state, "stopping", None)  # the server is told to stop

    async def generate():
        seq, quiet_since, give_up = since, time.monotonic(), None
        yield frame("hello", {"stream": stream.id, "source": stream.source, "status": stream.status})
        while not await request.is_disconnected():
            terminal = stream.terminal  # read before fetching, so the final feed is complete when we stop
            items = await run_in_threadpool(svc.streams.feed, stream, seq)
            for item_seq, item in items:
                seq = max(seq, item_seq)
                for message in feed_item_frames(item_seq, item):
                    yield message
            if stopping is not None and stopping.is_set() and give_up is None:
                give_up = time.monotonic() + SHUTDOWN_END_S  # the server stops the stream: wait for its end
            if items:
                quiet_since = time.monotonic()
            elif terminal:
                yield frame("end", {"status": stream.status, "error": stream.error})
                return
            elif give_up is not None and time.monotonic() > give_up:  # not ended in time: end the feed anyway
                yield frame("end", {"status": stream.status, "error": "the server is shutting down"})
                return
            elif time.monotonic() - quiet_since > 15:
                quiet_since = time.monotonic()
                yield comment()
            await asyncio.sleep(0.25 if items or give_up is not None else 0.5)

    return StreamingResponse(generate(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
