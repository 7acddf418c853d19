"""What the routers share: settings, store, managers and metrics, plus the API-key check."""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from fastapi import HTTPException, Request

from app.api.metrics import Metrics
from app.services.jobs import JobManager
from app.services.search import SearchService
from app.services.settings import Settings
from app.services.streams import StreamManager
from pipelines.sinks.store import Store


@dataclass
class Services:
    settings: Settings
    store: Store
    jobs: JobManager
    streams: StreamManager
    search: SearchService
    metrics: Metrics


def services(request: Request) -> Services:
    return request.app.state.services


def require_api_key(request: Request) -> None:
    """With an API key configured, /v1 needs `X-API-Key: KEY` or `Authorization: Bearer KEY`."""
    key = request.app.state.services.settings.api_key
    if key is None:
        return
    given = request.headers.get("x-api-key")
    auth = request.headers.get("authorization", "")
    if given is None and auth.lower().startswith("bearer "):
        given = auth[7:].strip()
    if given is None or not hmac.compare_digest(given.encode(), key.encode()):
        raise HTTPException(401, "missing or wrong API key (send X-API-Key or Authorization: Bearer)",
                            headers={"WWW-Authenticate": "Bearer"})
