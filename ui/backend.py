"""The dashboard's side of the pipeline: it calls the same code as the API, in its own process.

File analysis is `analyze_inline` (as an API job runs it) with the result saved to the same SQLite store,
live sources are a `Pipeline` of Ray actors read through the sink's feed, and search is the API's
`SearchService`. Pointing the dashboard and `foresight serve` at one `--db` makes each see the other's work.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable
from pathlib import Path

from app.api.search import SearchService
from app.api.uploads import check_media, safe_filename
from models.errors import BadInput
from pipelines import AnalyzeOptions, Pipeline, analyze_inline
from pipelines.media.sources import SourceKind, parse_source
from pipelines.sinks.store import Store

DEFAULT_DB = "foresight.db"


def db_path() -> Path:
    """The store the dashboard uses: `FORESIGHT_DB` (set by `foresight dashboard --db`) or ./foresight.db."""
    return Path(os.environ.get("FORESIGHT_DB") or DEFAULT_DB).resolve()


def media_dir() -> Path:
    return db_path().parent / "dashboard-media"


def save_upload(name: str, data: bytes) -> Path:
    """Keep an uploaded file (content-addressed) so the query box can play it back later."""
    digest = hashlib.sha256(data).hexdigest()[:16]
    path = media_dir() / digest / safe_filename(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        tmp = path.with_suffix(path.suffix + ".part")
        tmp.write_bytes(data)
        tmp.replace(path)
    return path


def analyze_file(store: Store, path: Path, options: AnalyzeOptions | None = None,
                 progress: Callable[[float], None] | None = None, max_duration_s: float = 3600.0) -> tuple[str, dict]:
    """Check and analyse a file, store the result as a job, return `(job_id, result)`; raises BadInput."""
    check_media(path, max_duration_s)
    job_id = store.create_job("dashboard", path.name)
    store.update_job(job_id, status="running")
    try:
        result = analyze_inline(str(path), options, progress)
    except Exception as exc:
        store.update_job(job_id, status="failed", error=str(exc))
        raise
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


_RAY_LOCK = threading.Lock()


def ensure_ray_in_keeper_thread() -> None:
    """Start Ray from a thread that lives as long as the process.

    Ray's local processes (GCS, raylet) are started with a parent-death signal, which Linux sends when the
    *thread* that spawned them ends; Streamlit runs every script run in a short-lived thread, so starting Ray
    there would kill it a moment later.
    """
    import ray

    from pipelines.spine.runtime import ensure_ray

    with _RAY_LOCK:
        if ray.is_initialized():
            return
        ready, errors = threading.Event(), []

        def keeper() -> None:
            try:
                ensure_ray()
            except BaseException as exc:  # handed to the caller below
                errors.append(exc)
            finally:
                ready.set()
            threading.Event().wait()

        threading.Thread(target=keeper, name="ray-keeper", daemon=True).start()
        ready.wait()
        if errors:
            raise errors[0]


def start_live(store: Store, source: str, rtsp_transport: str = "tcp",
               options: AnalyzeOptions | None = None) -> tuple[Pipeline, str]:
    """Start a live pipeline on a URL or device; returns it and the job id its rows are stored under."""
    options = options or AnalyzeOptions()
    options.rtsp_transport = rtsp_transport
    try:
        spec = parse_source(source, rtsp_transport)
    except OSError as exc:  # e.g. a name longer than the filesystem allows
        raise BadInput(f"cannot use this source ({exc.strerror or exc})") from None
    if spec.kind is SourceKind.FILE:
        raise BadInput("live view takes a URL (rtsp://, http(s)://) or a /dev/videoN device")
    ensure_ray_in_keeper_thread()
    job_id = store.create_job("dashboard-live", spec.name)
    store.update_job(job_id, status="running")
    try:
        pipeline = Pipeline(source, options, job_id=job_id, db_path=str(store.path))
    except Exception as exc:
        store.update_job(job_id, status="failed", error=str(exc))
        raise
    return pipeline, job_id


def stop_live(store: Store, pipeline: Pipeline, job_id: str) -> dict | None:
    """Stop a live pipeline and save its result; returns the result (None if the stream had failed)."""
    pipeline.stop()
    try:
        result = pipeline.wait()
        store.save_result(job_id, result)
        return result
    except Exception as exc:
        store.update_job(job_id, status="failed", error=str(exc))
        return None
    finally:
        pipeline.close()


def webcams() -> list[str]:
    return sorted(str(p) for p in Path("/dev").glob("video*"))


def searcher(store: Store) -> SearchService:
    return SearchService(store)

