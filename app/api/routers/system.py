"""`/healthz` and the Prometheus `/metrics` endpoint (open for probes and scrapers; `/metrics` needs the API key
when `metrics_need_key` is set)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from app.api.context import Services, require_api_key, services
from app.api.schemas import Health, Problem

router = APIRouter(tags=["system"])


@router.get("/healthz", response_model=Health)
def healthz(svc: Services = Depends(services)) -> Health:
    pending, running = svc.jobs.depth()
    disk = getattr(svc.jobs, "disk", None)
    reason = disk.reason if disk is not None else None
    return Health(status="degraded" if reason else "ok", reason=reason, jobs_queued=pending, jobs_running=running,
                  streams=svc.streams.unfinished())


@router.get("/metrics", response_class=Response,
            responses={200: {"content": {"text/plain": {}}}, 401: {"model": Problem}})
def metrics(request: Request, svc: Services = Depends(services)) -> Response:
    if svc.settings.metrics_need_key:
        require_api_key(request)
    return Response(generate_latest(svc.metrics.registry), media_type=CONTENT_TYPE_LATEST)
