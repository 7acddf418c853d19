"""`/healthz` and the Prometheus `/metrics` endpoint (both open, for probes and scrapers)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from app.api.context import Services, services
from app.api.schemas import Health

router = APIRouter(tags=["system"])


@router.get("/healthz", response_model=Health)
def healthz(svc: Services = Depends(services)) -> Health:
    pending, running = svc.jobs.depth()
    return Health(status="ok", jobs_queued=pending, jobs_running=running,
                  streams=sum(not s.terminal for s in svc.streams.list()))


@router.get("/metrics", response_class=Response, responses={200: {"content": {"text/plain": {}}}})
def metrics(svc: Services = Depends(services)) -> Response:
    return Response(generate_latest(svc.metrics.registry), media_type=CONTENT_TYPE_LATEST)
