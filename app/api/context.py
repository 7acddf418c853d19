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


NO_KEY = "missing or wrong API key (send X-API-Key or Authorization: Bearer)"


def key_matches(key: str, x_api_key: str | None, authorization: str | None) -> bool:
    """Whether the request's `X-API-Key` or `Authorization: Bearer` header carries `key` (constant time). The one
    check both the router dependency and the body guard (`guards.BodyLimits`, before any body is read) use."""
    given = x_api_key
    auth = authorization or ""
    if given is None and auth.lower().startswith("bearer "):
        given = auth[7:].strip()
    return given is not None and hmac.compare_digest(given.encode("utf-8", "replace"), key.encode())


def require_api_key(request: Request) -> None:
    """With an API key configured, /v1 needs `X-API-Key: KEY` or `Authorization: Bearer KEY`."""
    key = request.app.state.services.settings.api_key
    if key is None:
        return
    if not key_matches(key, request.headers.get("x-api-key"), request.headers.get("authorization")):
        raise HTTPException(401, NO_KEY, headers={"WWW-Authenticate": "Bearer"})
