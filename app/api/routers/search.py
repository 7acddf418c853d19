"""`POST /v1/search`: ground a text query over everything stored."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from app.api.context import Services, require_api_key, services
from app.api.schemas import BODY_REFUSALS, Problem, SearchRequest, SearchResponse

router = APIRouter(prefix="/v1", tags=["search"], dependencies=[Depends(require_api_key)])


@router.post("/search", response_model=SearchResponse, responses={400: {"model": Problem}, **BODY_REFUSALS},
             summary="Moments matching a query across all stored jobs and streams")
def search(body: SearchRequest, svc: Services = Depends(services)) -> SearchResponse:
    return SearchResponse(**svc.search.search(body.query, body.top_k, body.job_ids))
