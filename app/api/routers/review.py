"""The review feed (`pipelines.sinks.review`): `GET /v1/review` lists the cards (filters: kind, source, reviewed,
job; paging), `GET /v1/review/{id}` one card, `PATCH /v1/review/{id}` marks it reviewed or not, and
`GET /v1/review/{id}/thumbnail` is its picture."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, HTTPException, Path, Query
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field

from app.api.context import Services, require_api_key, services
from app.api.schemas import BODY_REFUSALS, Problem, Text

router = APIRouter(prefix="/v1/review", tags=["review"], dependencies=[Depends(require_api_key)])

Kind = Literal["alert", "watch", "crossing", "loiter", "event"]
CardId = Annotated[int, Path(ge=1, le=2**63 - 1, description="the card's id")]
BEFORE_S = 3.0  # a card's clip starts this long before it
AFTER_S = 10.0


class ReviewCard(BaseModel):
    id: int
    job_id: str
    source: str = Field(description="the camera: the source's name (credentials redacted)")
    kind: Kind
    title: str = Field(description="what fired: the rule, the watch's query, the crossing, the loiter, the sound")
    why: str = Field(description="why it fired: the alert's reason, the matched span and score, the track")
    severity: str | None = Field(None, description="alerts: info, warning or critical")
    time: float = Field(description="stream time of its first firing, seconds")
    last_time: float = Field(description="stream time of its last firing (merged repeats), seconds")
    wall_time: float = Field(description="wall clock (epoch seconds) of its first firing")
    last_wall: float
    count: int = Field(ge=1, description="firings merged into this card (repeats within 60 s of stream time)")
    reviewed: bool
    reviewed_at: float | None = None
    thumbnail_url: str | None = Field(None, description="its picture (image/jpeg), when the second had one")
    clip_url: str = Field(description="a live stream's recording from 3 s before it (404 when not recorded)")


class ReviewPage(BaseModel):
    cards: list[ReviewCard]
    total: int = Field(ge=0, description="cards matching the filters, all pages")
    limit: int
    offset: int


class ReviewUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reviewed: bool


def _card(row: dict) -> ReviewCard:
    start = max(0.0, row["time"] - BEFORE_S)
    return ReviewCard(**{k: row[k] for k in ReviewCard.model_fields if k in row},
                      thumbnail_url=f"/v1/review/{row['id']}/thumbnail" if row["has_thumbnail"] else None,
                      clip_url=f"/v1/jobs/{row['job_id']}/clip?start={start:.3f}&end={row['time'] + AFTER_S:.3f}")


def _get(svc: Services, card_id: int) -> dict:
    row = svc.store.review_card(card_id)
    if row is None:
        raise HTTPException(404, "no such card")
    return row


@router.get("", response_model=ReviewPage, summary="Review cards, newest first (filter by kind, source, state)")
def list_cards(kind: Kind | None = Query(None, description="alert, watch, crossing, loiter or event"),
               source: Text | None = Query(None, min_length=1, max_length=2000,
                                           description="the camera (a card's `source`)"),
               reviewed: bool | None = Query(None, description="true: reviewed only; false: not yet reviewed"),
               job_id: Text | None = Query(None, min_length=1, max_length=200, description="one job's cards"),
               limit: int = Query(50, ge=1, le=500), offset: int = Query(0, ge=0, le=10**9),
               svc: Services = Depends(services)) -> ReviewPage:
    rows = svc.store.review_cards(kind, source, reviewed, job_id, limit, offset)
    return ReviewPage(cards=[_card(r) for r in rows], total=svc.store.count_cards(kind, source, reviewed, job_id),
                      limit=limit, offset=offset)


@router.get("/{card_id}", response_model=ReviewCard, responses={404: {"model": Problem}}, summary="One card")
def get_card(card_id: CardId, svc: Services = Depends(services)) -> ReviewCard:
    return _card(_get(svc, card_id))


@router.patch("/{card_id}", response_model=ReviewCard,
              responses={400: {"model": Problem, "description": "a body that is not JSON"}, 404: {"model": Problem},
                         **BODY_REFUSALS},
              summary="Mark a card reviewed (`{\"reviewed\": true}`) or not reviewed again")
def update_card(card_id: CardId, body: ReviewUpdate, svc: Services = Depends(services)) -> ReviewCard:
    if not svc.store.set_reviewed(card_id, body.reviewed):
        raise HTTPException(404, "no such card")
    return _card(_get(svc, card_id))


@router.get("/{card_id}/thumbnail", response_class=Response,
            responses={200: {"content": {"image/jpeg": {}}, "description": "the card's picture, 320 px wide"},
                       404: {"model": Problem}}, summary="A card's thumbnail")
def card_thumbnail(card_id: CardId, svc: Services = Depends(services)) -> Response:
    _get(svc, card_id)
    jpeg = svc.store.card_thumbnail(card_id)
    if jpeg is None:
        raise HTTPException(404, "this card has no picture")
    return Response(jpeg, media_type="image/jpeg", headers={"Cache-Control": "private, max-age=3600"})
