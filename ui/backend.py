"""The dashboard's side of the pipeline: the same services as the REST API and the CLI, in its own process.

File analysis is a job run by `app.services.jobs.run_job` with the result saved to the same SQLite store,
live sources belong to one `app.services.streams.StreamManager` per dashboard process (shared by every browser
tab, so a reload or a second user sees and can stop the same streams), and search is
`app.services.search.SearchService`. Pointing the dashboard and `foresight serve` at one `--db` makes each see
the other's work.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable
from pathlib import Path

from app.services import uploads
from app.services.jobs import ground_queries, run_job
from app.services.model_choice import MODELS, check_models, with_models
from app.services.recordings import (
    RecordedSpan,
    Retention,
    clip_for_job,
    recorded_span,
    recording_dir,
    recordings_root,
)
from app.services.search import SearchService
from app.services.settings import dashboard_db
from app.services.streams import LiveStream, StreamManager, live_spec
from models.errors import BadInput
from pipelines import AnalyzeOptions, GroundingConfig
from pipelines.sinks.store import Store

DETECTOR, DETECTORS = MODELS["detector"][1:]  # the dashboard's default detector, and its choices
POSE, POSES = MODELS["pose"][1:]  # and pose model

__all__ = ["analysis_options", "analyze_file", "db_path", "max_streams", "media_dir", "media_for", "has_recording", "recorded_clip",
           "recording_folder", "recording_span", "retention", "save_upload", "searcher", "start_stream", "stream_manager", "webcams"]
LIVE_JOB_KIND = "dashboard-live"
MAX_DURATION_S = 3600.0  # longest clip the dashboard analyses
log = logging.getLogger("foresight.dashboard")


def db_path() -> Path:
    """The store the dashboard uses: `FORESIGHT_DB` (set by `foresight dashboard --db`) or ./foresight.db."""
    return dashboard_db()


def max_streams() -> int:
    """How many live sources may run at once: `FORESIGHT_MAX_STREAMS` (set by `foresight dashboard
    --max-streams`), default 2 (each holds several GB of models in its Ray actors)."""
    return max(1, int(os.environ.get("FORESIGHT_MAX_STREAMS", "2")))


def retention() -> Retention:
    """How much of each live source is recorded and kept: `FORESIGHT_RECORD_MINUTES`, `FORESIGHT_RECORD_GB` and
    `FORESIGHT_KEEP_DAYS` (set by `foresight dashboard --record-minutes/--record-gb/--keep-days`), default 60 min,
    2 GB and 30 days."""
    return Retention(minutes=float(os.environ.get("FORESIGHT_RECORD_MINUTES", "60")),
                     gb=float(os.environ.get("FORESIGHT_RECORD_GB", "2")),
                     keep_days=float(os.environ.get("FORESIGHT_KEEP_DAYS", "30")))


def stream_manager(store: Store) -> StreamManager:
    """The process's registry of live sources (jobs of a dashboard that died while streaming are marked failed);
    each is recorded under `recordings/` next to the store, as `foresight serve` records its streams."""
    options = AnalyzeOptions()
    options.reconnect.outage_budget_s = math.inf  # a camera away for a while is retried until it comes back
    return StreamManager(store, str(store.path), options, max_streams(), job_kind=LIVE_JOB_KIND,
                         recordings=recordings_root(store.path), retention=retention())


def has_recording(store: Store, job_id: str | None) -> bool:
    """Whether job `job_id` (a live stream) has segments of its recording on disk."""
    from pipelines.media.recorder import list_segments

    folder = recording_dir(recordings_root(store.path), job_id) if job_id else None
    return folder is not None and bool(list_segments(folder))


def recording_folder(store: Store, job_id: str | None) -> Path | None:
    """Job `job_id`'s recording folder when it holds segments (a live stream's), else None."""
    return recording_dir(recordings_root(store.path), job_id) if has_recording(store, job_id) else None


def recording_span(store: Store, job_id: str) -> RecordedSpan | None:
    """Job `job_id`'s recording by the clock (`app.services.recordings.recorded_span`), or None."""
    return recorded_span(store, recordings_root(store.path), job_id)


LEAD_S = 3.0  # every player in the dashboard (card, search hit, playback button) starts this long before its moment


def recorded_clip(store: Store, job_id: str, t: float, before_s: float = LEAD_S, after_s: float = 10.0):
    """The recording of job `job_id` from `before_s` before stream time `t` to `after_s` after it (a
    `pipelines.media.clips.Clip`), or None when that part is not recorded."""
    from pipelines.media.clips import ClipFailed

    try:
        return clip_for_job(store, recordings_root(store.path), job_id, max(0.0, t - before_s), t + after_s)
    except (LookupError, ValueError):
        return None
    except ClipFailed as exc:
        log.warning("%s", exc)
        return None


def analysis_options(questions: list[str] = (), watches: list[str] = (),
                     safety_threshold: float | None = None, detector: str = DETECTOR,
                     pose: str = POSE, ocr: bool = False) -> AnalyzeOptions:
    """Options for one file or stream: questions answered at the end, standing queries (watches) checked as the
    source plays, the safety monitor's threshold, and whether text on screen is read. Questions and watches need
    the grounding checkpoint (BadInput if absent, for watches; questions then fall back to text matching, as the
    REST API does)."""
    from app.services.jobs import resolve_grounder

    opts = with_models(AnalyzeOptions(), check_models({"detector": detector, "pose": pose}))
    opts.stages.safety_threshold, opts.stages.ocr = safety_threshold, ocr
    questions, watches = [q for q in questions if q.strip()], [w for w in watches if w.strip()]
    if questions or watches:
        checkpoint = resolve_grounder(None)
        if checkpoint is None and watches:
            raise BadInput("watches need the grounding model, which is not built on this server")
        if checkpoint is not None:
            opts.grounding = GroundingConfig(queries=questions, standing=watches, checkpoint=checkpoint)
    return opts


def start_stream(manager: StreamManager, source: str, rtsp_transport: str,
                 options: AnalyzeOptions | None = None, zones: list[str] = (), lines: list[str] = (),
                 track: bool = False, detect_source: str | None = None) -> LiveStream:
    """Add a live source (tracked, with `zones` and counting `lines` in the `--zone`/`--line` syntax, when asked;
    analysing its sub-stream `detect_source` while it is recorded, when given); it connects in the background.
    Ray is started first from a thread that outlives Streamlit's script runs (see `ensure_ray_in_keeper_thread`).
    BadInput or TooManyStreams when refused."""
    from pipelines.media.detect_source import parse_detect_source
    from pipelines.spine.runtime import ensure_ray_in_keeper_thread

    spec = live_spec(source, rtsp_transport, "a live source is a URL (rtsp://, http(s)://) or a /dev/videoN device; "
                     "use \"File on the server\" for a file")
    parse_detect_source(detect_source, spec, rtsp_transport, what="the detect stream")  # before Ray starts
    ensure_ray_in_keeper_thread()
    return manager.add(source, rtsp_transport, options, zones=list(zones), lines=list(lines), track=track,
                       detect_source=detect_source)


def media_dir() -> Path:
    return db_path().parent / "dashboard-media"


def save_upload(name: str, data: bytes) -> Path:
    """Keep an uploaded file (content-addressed) so the query box can play it back later."""
    return uploads.save_upload(media_dir(), name, data)


def discard_upload(path: Path) -> None:
    """Delete a refused upload (and its content-addressed folder once empty)."""
    path.unlink(missing_ok=True)
    try:
        path.parent.rmdir()
    except OSError:  # another upload with the same content keeps the folder
        pass


def server_file(text: str) -> Path:
    """The file named in the "File on the server" box; BadInput saying what it is instead (a URL, a folder,
    nothing at all)."""
    text = text.strip()
    if "://" in text:
        raise BadInput(f"{text} is a URL, not a file: choose \"RTSP / HTTP URL\" to follow it live")
    path = Path(text).expanduser()
    try:
        if path.is_dir():
            raise BadInput(f"{text} is a folder; name one file in it")
        if not path.is_file():
            raise BadInput(f"no such file on the server: {text}")
    except OSError as exc:  # e.g. a name longer than the filesystem allows
        raise BadInput(f"cannot use this path ({exc.strerror or exc})") from None
    return path


LEFT = "left unfinished: the page was changed or reloaded while the file was analysed; analyse it again"


def analyze_file(store: Store, path: Path, options: AnalyzeOptions | None = None,
                 progress: Callable[[float], None] | None = None, max_duration_s: float = MAX_DURATION_S,
                 questions: list[str] = ()) -> tuple[str, dict]:
    """Check and analyse a file, store the result as a job, return `(job_id, result)`; raises BadInput."""
    uploads.check_media(path, max_duration_s)
    job_id = store.create_job("dashboard", path.name)
    try:
        result = run_job(store, job_id, str(path), uploads.capped(options, max_duration_s), on_progress=progress)
    except Exception as exc:
        store.update_job(job_id, status="failed", error=str(exc))
        raise
    except BaseException:  # Streamlit's rerun or stop (a widget touched, the page reloaded): the analysis is left
        store.update_job(job_id, status="failed", error=LEFT)
        raise
    if questions and not (options and options.grounding.queries):  # no grounding model: match the text
        result["moments"] = ground_queries(result, questions)
    result["media_path"] = str(path)
    store.save_result(job_id, result)
    return job_id, result


def media_for(store: Store, job_id: str | None) -> Path | None:
    """The playable file behind a stored job, when the dashboard kept one."""
    if not job_id:
        return None
    result = store.result(job_id)
    path = Path(result["media_path"]) if result and result.get("media_path") else None
    return path if path is not None and path.is_file() else None


def webcams() -> list[str]:
    return sorted(str(p) for p in Path("/dev").glob("video*"))


def searcher(store: Store) -> SearchService:
    return SearchService(store)
