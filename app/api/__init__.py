"""The REST API (FastAPI): uploads as jobs, live streams with an SSE feed, search, health and metrics."""

from app.api.app import create_app
from app.services.settings import Settings

__all__ = ["Settings", "create_app"]
