"""`POST /v1/analyze` (upload a clip, get a job), `GET /v1/jobs/{id}`, `GET /v1/jobs/{id}/result`, and
`GET /v1/jobs/{id}/clip` (a live stream's recording between two stream times)."""

from __future__ import annotations

import shutil
import uuid

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from app.api.context import Services, require_api_key, services
from app.api.multipart import receive_upload
from app.api.schemas import AnalysisResult, JobCreated, JobStatus, Problem, checked_text
from app.services.jobs import QueueFull
from app.services.model_choice import MODELS, check_models
from app.services.recordings import clip_for_job
from app.services.uploads import UploadRejected, check_media
from models.errors import BadInput
from pipelines.media.clips import ClipFailed

router = APIRouter(prefix="/v1", tags=["jobs"], dependencies=[Depends(require_api_key)])

UPLOAD_BODY = {
    "requestBody": {
        "required": True,
        "content": {"multipart/form-data": {"schema": {
            "type": "object", "required": ["file"],
            "properties": {
                "file": {"type": "string", "format": "binary", "description": "the clip (video or audio)"},
                "query": {"type": "array", "items": {"type": "string"},
                          "description": "text queries grounded in the clip (repeat the field)"},
                **{name: {"type": "string", "enum": list(names), "description": f"the {name} for this clip "
                          f"(default: the server's --{name}; docs/perception.md)"}
                   for name, (_, _, names) in MODELS.items()},
            }}}},
    }
}
ERRORS = {code: {"model": Problem} for code in (400, 401, 408, 413, 415, 422, 429)}


def _models(fields: dict[str, list[str]]) -> dict[str, str]:
    """The clip's own `detector` and `pose` form fields, checked as the CLI checks its flags (a 422 names the
    field and the names offered); absent ones leave the server's."""
    given = {}
    for name in MODELS:
        values = fields.get(name, [])
        if len(values) > 1:
            raise UploadRejected(422, f"{name}: give one name, not {len(values)}")
        given[name] = values[0].strip() if values else None
    try:
        return check_models(given, echo=False)
    except BadInput as exc:
        raise UploadRejected(422, str(exc)) from None


def _reject(svc: Services, status: int, reason: str, headers: dict | None = None) -> JSONResponse:
    svc.metrics.rejected.labels(str(status)).inc()
    return JSONResponse({"detail": reason}, status_code=status, headers=headers)


@router.post("/analyze", status_code=202, response_model=JobCreated, responses=ERRORS, openapi_extra=UPLOAD_BODY,
             summary="Upload a clip; analysis runs as a job")
async def analyze(request: Request, svc: Services = Depends(services)):
    settings = svc.settings
    pending, running = svc.jobs.depth()
    if pending + running >= svc.jobs.max_queue:  # refuse before reading the body
        return _reject(svc, 429, f"job queue is full ({svc.jobs.max_queue} jobs); retry later", {"Retry-After": "5"})
    job_id = uuid.uuid4().hex
    folder = settings.upload_dir / job_id
    try:
        upload = await receive_upload(request, folder, settings.max_upload_bytes, settings.allowed_content_types,
                                      timeout_s=settings.body_timeout_s)
        models = _models(upload.fields)
        queries = [q.strip() for q in upload.fields.get("query", []) if q.strip()]
        if len(queries) > 20:
            raise UploadRejected(422, "at most 20 queries per clip")
        for query in queries:  # as the JSON routes check their text
            try:
                checked_text(query)
            except ValueError as exc:
                raise UploadRejected(422, f"query: {exc}") from None
        await run_in_threadpool(check_media, upload.path, settings.max_duration_s)
        svc.jobs.submit(job_id, upload.path, upload.filename, queries, models)
    except UploadRejected as exc:
        shutil.rmtree(folder, ignore_errors=True)
        return _reject(svc, exc.status, str(exc))
    except QueueFull as exc:
        shutil.rmtree(folder, ignore_errors=True)
        return _reject(svc, 429, str(exc), {"Retry-After": "5"})
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return JobCreated(job_id=job_id, status="queued", status_url=f"/v1/jobs/{job_id}",
                      result_url=f"/v1/jobs/{job_id}/result")


@router.get("/jobs/{job_id}", response_model=JobStatus, responses={404: {"model": Problem}},
            summary="Status and progress of a job")
def job_status(job_id: str, svc: Services = Depends(services)) -> JobStatus:
    job = svc.store.job(job_id)
    if job is None:
        raise HTTPException(404, "no such job")
    return JobStatus(job_id=job["id"], kind=job["kind"], source=job["source"], status=job["status"],
                     progress=min(1.0, max(0.0, job["progress"])), error=job["error"],
                     created_at=job["created_at"], updated_at=job["updated_at"])


@router.get("/jobs/{job_id}/result", response_model=AnalysisResult,
            responses={404: {"model": Problem}, 409: {"model": Problem}}, summary="The finished job's result")
def job_result(job_id: str, svc: Services = Depends(services)):
    job = svc.store.job(job_id)
    if job is None:
        raise HTTPException(404, "no such job")
    if job["status"] == "failed":
        raise HTTPException(409, f"job failed: {job['error']}")
    result = svc.store.result(job_id)
    if job["status"] not in ("done", "stopped") or result is None:
        raise HTTPException(409, f"job is {job['status']} ({job['progress']:.0%}); poll its status_url")
    return JSONResponse(result)


@router.get("/jobs/{job_id}/clip", response_class=Response,
            responses={200: {"content": {"video/mp4": {}}, "description": "an MP4 of the recording; header "
                             "X-Clip-Start: the stream time of its 0 s"},
                       400: {"model": Problem}, 404: {"model": Problem}, 500: {"model": Problem}},
            summary="A live stream's recording between two stream times (seconds), e.g. 3 s before an alert")
def job_clip(job_id: str, start: float = Query(ge=0, description="stream time, seconds"),
             end: float = Query(gt=0, description="stream time, seconds; at most 120 s after start"),
             svc: Services = Depends(services)) -> Response:
    try:
        clip = clip_for_job(svc.store, svc.settings.recordings_dir, job_id, start, end)
    except LookupError as exc:
        raise HTTPException(404, str(exc)) from None
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None
    except ClipFailed as exc:
        raise HTTPException(500, str(exc)) from None
    return Response(clip.data, media_type="video/mp4",
                    headers={"X-Clip-Start": f"{clip.start:.3f}", "X-Clip-End": f"{clip.end:.3f}"})
