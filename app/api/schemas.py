"""Pydantic models of the REST contract (they are what `/openapi.json` and the fuzzer see)."""

from __future__ import annotations

import unicodedata
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError


def checked_text(value: str) -> str:
    """Refuse what no sane client sends and what breaks encoders later: lone surrogates and control characters."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode text (no lone surrogates)") from None
    if any(unicodedata.category(ch) == "Cc" for ch in value):
        raise ValueError("must not contain control characters")
    return value


def _words(value: str) -> str:
    if not value.strip():
        raise ValueError("must contain a non-blank character")
    return value


Text = Annotated[str, AfterValidator(checked_text)]
Watch = Annotated[str, AfterValidator(checked_text), AfterValidator(_words), Field(min_length=1, max_length=200)]
JobStatusName = Literal["queued", "running", "done", "stopped", "failed"]  # stopped: a live stream stopped by its user
StreamStatusName = Literal["starting", "running", "reconnecting", "ended", "stopped", "failed"]


class Problem(BaseModel):
    detail: str = Field(description="one-line reason")


# What the body guard (`app.api.guards.BodyLimits`) answers on any JSON route before the route runs.
BODY_REFUSALS = {code: {"model": Problem} for code in (401, 408, 413, 415)}


class JobCreated(BaseModel):
    job_id: str
    status: JobStatusName
    status_url: str
    result_url: str


class JobStatus(BaseModel):
    job_id: str
    kind: str
    source: str
    status: JobStatusName
    progress: float = Field(ge=0, le=1)
    error: str | None = None
    created_at: float
    updated_at: float


class Event(BaseModel):
    label: str
    modality: Literal["audio", "visual", "audio-visual"]
    start: float
    end: float
    confidence: float
    source: Literal["prefm", "tags", "ocr"] | None = Field(None, description="the model that produced the event")
    taxonomy: Literal["llp", "audioset", "coco", "ocr"] | None = Field(
        None, description="the label's class list (ocr: the label is text read on screen)")
    name: str | None = Field(None, description="the label as a person writes it")


class TranscriptSegment(BaseModel):
    model_config = ConfigDict(extra="allow")
    start: float
    end: float
    text: str


class Moment(BaseModel):
    model_config = ConfigDict(extra="allow")
    query: str
    start: float
    end: float
    score: float
    modality_weights: dict[str, float]


class Alert(BaseModel):
    model_config = ConfigDict(extra="allow")
    time: float
    severity: str
    rule: str
    reason: str
    lead_time_s: float | None = None
    evidence: list[str] = []


class AnalysisResult(BaseModel):
    """The design's result schema (extra keys such as `ingest` pass through)."""

    model_config = ConfigDict(extra="allow")
    schema_version: int
    source: str
    duration_s: float
    has_audio: bool
    events: list[Event]
    transcript: list[TranscriptSegment]
    moments: list[Moment]
    alerts: list[Alert]
    timings: dict


LayoutSpec = Annotated[Text, Field(min_length=1, max_length=2000)]


class StreamCreate(BaseModel):
    source: Text = Field(min_length=1, max_length=2048,
                         description="rtsp://, rtsps://, http(s):// (HLS too); /dev/videoN only when the server allows "
                                     "devices. The server's source policy decides which hosts may be reached.")
    rtsp_transport: Literal["tcp", "udp"] | None = None
    persistent: bool = Field(False, description="reconnect this stream when the server restarts (its source, "
                                                "credentials included, is kept in the server's database)")
    watches: list[Watch] = Field(
        default_factory=list, max_length=20, description="standing queries, checked every 5 s over the last 30 s; one ending in '@0.7' fires at "
                                        "that score instead of the server's threshold")
    zones: list[LayoutSpec] = Field(
        default_factory=list, max_length=32, description="polygon zones as on the CLI, 'NAME=x,y x,y x,y ...' "
                                                        "(0-1 on the picture): tracking with zone_enter/exit/loiter")
    lines: list[LayoutSpec] = Field(
        default_factory=list, max_length=32, description="counting lines as on the CLI, 'NAME=x1,y1,x2,y2' (0-1)")
    track: bool = Field(False, description="track objects even without zones or lines (they can be set later "
                                           "with PUT /v1/streams/{id}/zones); zones or lines imply it")
    detector: str | None = Field(None, max_length=64, description="the object detector for this stream (the "
                                 "CLI's --detector names; default: the server's)")
    pose: str | None = Field(None, max_length=64, description="the pose model for this stream (the CLI's --pose "
                             "names; default: the server's)")
    detect_source: Text | None = Field(None, min_length=1, max_length=2048,
                                       description="the camera's low-resolution sub-stream (the CLI's "
                                       "--detect-source): analysed, while `source` is recorded; the same policy "
                                       "applies to it")

    @model_validator(mode="after")
    def _layout(self) -> StreamCreate:
        from pipelines.media.detect_source import same_source

        if self.detect_source is not None and same_source(self.detect_source, self.source):
            raise ValueError("detect_source is the main source itself; give the camera's low-resolution sub-stream")
        return _checked_models(_checked_layout(self))

    def models(self) -> dict[str, str]:
        """The picture models this stream asked for (checked), for the stream manager."""
        from app.services.model_choice import MODELS, check_models

        return check_models({name: getattr(self, name) for name in MODELS}, echo=False)


def _checked_models(body):
    """The detector and pose names checked as the CLI checks its flags: an unknown one is a 422 listing them."""
    from models.errors import BadInput

    try:
        body.models()
    except BadInput as exc:
        raise ValueError(str(exc)) from None
    return body


def _checked_layout(body):
    """Zones and lines checked by the CLI's parser: a bad one is a 422 naming it."""
    from models.errors import BadInput
    from models.zones import parse_layout

    try:
        parse_layout(body.zones, body.lines, echo=False)
    except BadInput as exc:
        raise ValueError(str(exc)) from None
    return body


class LayoutUpdate(BaseModel):
    zones: list[LayoutSpec] = Field(default_factory=list, max_length=32,
                                    description="the stream's zones from now on ('NAME=x,y x,y x,y ...', 0-1)")
    lines: list[LayoutSpec] = Field(default_factory=list, max_length=32,
                                    description="the stream's counting lines from now on ('NAME=x1,y1,x2,y2')")

    @model_validator(mode="after")
    def _layout(self) -> LayoutUpdate:
        return _checked_layout(self)


class WatchesUpdate(BaseModel):
    watches: list[Watch] = Field(
        max_length=20, description="the stream's standing queries from now on (an empty list removes them all)")


class StreamInfo(BaseModel):
    id: str
    source: str
    job_id: str
    status: StreamStatusName = Field(description="'reconnecting' while its source is away: health.outage_since "
                                     "(epoch s of its last data) and health.last_error say since when and why")
    error: str | None = None
    created_at: float
    persistent: bool = False
    health: dict = Field(default_factory=dict, description="ingest counters: health, frames, drops, reconnects")
    events_url: str
    watches: list[str] = Field(default_factory=list, description="its standing queries")
    zones: list[str] = Field(default_factory=list, description="its tracking zones, as given")
    lines: list[str] = Field(default_factory=list, description="its counting lines, as given")
    track: bool = Field(False, description="it tracks objects (zones and lines can change while it runs)")
    recorded: bool = Field(False, description="its raw stream is recorded: GET /v1/jobs/{job_id}/clip plays it")
    detector: str | None = Field(None, description="the object detector it runs")
    pose: str | None = Field(None, description="the pose model it runs")
    detect_source: str | None = Field(None, description="the sub-stream it analyses (credentials hidden); "
                                      "`source` is recorded")


def _some_jobs(value: object) -> object:
    """`[]` would read as "every job" to some and "no job" to others: refused, saying what to send instead."""
    if isinstance(value, list) and not value:
        raise PydanticCustomError("empty_job_ids", "an empty list matches no job; leave it out to search every job")
    return value


class SearchRequest(BaseModel):
    query: Annotated[Text, AfterValidator(_words)] = Field(min_length=1, max_length=1000, pattern=r"[^\s\x00-\x1f\x7f]")
    top_k: int = Field(5, ge=1, le=100)
    job_ids: Annotated[list[Annotated[Text, Field(max_length=200)]] | None, BeforeValidator(_some_jobs)] = Field(
        None, min_length=1, max_length=1000, description="restrict to these jobs, matched exactly (default: all; "
        "an empty list is a 422)")


class SearchHit(BaseModel):
    job_id: str | None
    source: str | None
    text: str | None = Field(description="the transcript segment or event label that matched")
    kind: str = Field(description="speech, audio, visual, audio-visual (text-match) or grounded (trisense)")
    start: float
    end: float
    score: float
    modality_weights: dict[str, float]
    method: str


class SearchResponse(BaseModel):
    query: str
    method: str = Field(description="text-match (MiniLM similarity over transcripts and event labels), "
                                    "plus trisense when a grounding index is configured")
    moments: list[SearchHit]
    trisense: dict | None = Field(None, description="the learned grounder's verdict when it searched: found, "
                                  "best_score and the calibrated threshold under which it answers not found")


class Health(BaseModel):
    status: Literal["ok", "degraded"]
    reason: str | None = Field(None, description="why the server is degraded (e.g. the disk is full)")
    jobs_queued: int
    jobs_running: int
    streams: int
