"""Files become jobs in the store: one way to run an analysis as a job (`run_job`, `record_outcome`) for
the REST API, the dashboard and batch, and the API's bounded queue in front of Ray tasks (`JobManager`).

Each API task opens the SQLite store itself and writes its progress there, so `GET /v1/jobs/{id}` is one
indexed read in the server and never waits on Ray. The server process only saves results and hands out work.
"""

from __future__ import annotations

import json
import logging
import shutil
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from app.progress import share_done
from app.services.disk import DiskHealth, no_space_reason
from app.services.model_choice import check_models, with_models
from models.errors import BadInput
from pipelines import AnalyzeOptions, GroundingConfig, analyze_inline
from pipelines.sinks.store import Store

log = logging.getLogger(__name__)
JOB_META = ".job.json"
JOB_TASK_OPTIONS = dict(num_cpus=1, max_retries=1)  # one analysis a logical CPU; a crashed worker retries once


def _upload_on_disk(folder: Path, name: str) -> tuple[dict, Path | None]:
    """The job's saved metadata and its uploaded file, if the folder still holds it."""
    try:
        meta = json.loads((folder / JOB_META).read_text())
    except (OSError, ValueError):
        meta = {}
    try:
        files = sorted(f for f in folder.iterdir() if f.is_file() and f.name != JOB_META)
    except OSError:
        return meta, None
    named = [f for f in files if f.name == meta.get("name", name)]
    return meta, (named or files or [None])[0]


def _finished(job: dict | None) -> bool:
    return job is None or job["status"] in ("done", "failed")


class QueueFull(Exception):
    """The job queue holds `max_queue` jobs already."""


class NoSpace(Exception):
    """A write failed because the disk or the database is full (the API answers 507)."""


@dataclass
class PendingJob:
    job_id: str
    path: Path
    name: str
    queries: list[str]
    submitted: float
    models: dict[str, str] = field(default_factory=dict)  # its own detector / pose (checked), else the server's


def run_job(store: Store, job_id: str, path: str, options: AnalyzeOptions | None = None,
            on_progress: Callable[[float], None] | None = None) -> dict:
    """Analyze `path` inline as job `job_id`: marked running, progress written to the store (at most twice a
    second), review cards written as they come (with thumbnails: the analysed pictures are kept), the result
    returned; exceptions propagate (see `outcome`)."""
    last = [0.0]

    def progress(done: dict) -> None:
        fraction = share_done(done)
        if fraction is None:  # a stream of unknown length has no fraction done
            return
        now = time.monotonic()
        if now - last[0] >= 0.5 or fraction >= 1.0:
            last[0] = now
            store.update_job(job_id, progress=round(min(fraction, 0.999), 3))
        if on_progress is not None:
            on_progress(fraction)

    store.update_job(job_id, status="running", progress=0.0)
    options = options or AnalyzeOptions()
    options = replace(options, stages=replace(options.stages, keep_picture=True))
    return analyze_inline(path, options, progress, job=(job_id, store))


def outcome(fn: Callable[[], dict]) -> tuple[dict | None, str | None]:
    """`(result, None)`, or `(None, reason)` when `fn` fails: a bad file is an error, not a crash."""
    try:
        return fn(), None
    except BadInput as exc:
        return None, str(exc)
    except Exception as exc:  # recorded against the job; the caller keeps going
        return None, f"internal error: {exc!r}"


def record_outcome(store: Store, job_id: str, result: dict | None, error: str | None) -> None:
    """Save a finished job's result, or mark it failed with the reason."""
    if result is not None:
        store.save_result(job_id, result)
    else:
        store.update_job(job_id, status="failed", error=error)


def ground_queries(result: dict, queries: list[str], top_k: int = 3) -> list[dict]:
    """Moments for `queries` by text matching over the result's own transcript and event labels."""
    from app.services.search import TextMatcher, candidates_from_result

    matcher = TextMatcher()
    cands = candidates_from_result(result)
    moments = []
    for q in queries:
        for hit in matcher.rank(q, cands, top_k):
            moments.append({"query": q, "start": hit["start"], "end": hit["end"], "score": hit["score"],
                            "modality_weights": hit["modality_weights"], "method": "text-match"})
    return moments


def resolve_grounder(checkpoint: str | Path | None) -> str | None:
    """The grounding checkpoint queries use: the configured one (which must exist), else the shipped default
    when it has been built, else None (queries are then answered by text matching)."""
    from pipelines.stages.grounding import checkpoint_path

    try:
        return str(checkpoint_path(str(checkpoint) if checkpoint else None))
    except BadInput:
        if checkpoint:
            raise FileNotFoundError(f"no grounding checkpoint at {checkpoint}") from None
        return None


def analyze_job(path: str, name: str, queries: list[str], options: AnalyzeOptions, db_path: str,
                job_id: str, grounder: str | None = None) -> tuple[dict | None, str | None]:
    """Ray task body: analyze one upload, writing progress to the store; a bad file is an error, not a crash.

    Queries go through the pipeline's grounding stage (as `foresight analyze --query`) when a grounding
    checkpoint exists, otherwise they are matched against the result's transcript and event labels.
    """
    store = Store(db_path)
    if grounder:  # answer the queries and index the clip's features for search over everything stored
        options = replace(options, grounding=GroundingConfig(queries=list(queries), checkpoint=grounder,
                                                             index_db=db_path, index_source=f"{name}#{job_id[:8]}"))

    def analysis() -> dict:
        result = run_job(store, job_id, path, options)
        result["source"] = name
        if queries and not grounder:
            result["moments"] = ground_queries(result, queries)
        return result

    try:
        return outcome(analysis)
    finally:
        store.close()


class JobManager:
    """Holds queued jobs, keeps at most `parallel` Ray tasks running, and records what they return."""

    def __init__(self, store: Store, db_path: Path, options: AnalyzeOptions, max_queue: int,
                 parallel: int | None = None, keep_uploads: bool = False, grounder: str | Path | None = None,
                 upload_dir: Path | None = None):
        self.store = store
        self.upload_dir = Path(upload_dir) if upload_dir is not None else Path(db_path).parent / "uploads"
        self.grounder = resolve_grounder(grounder)
        self.db_path = str(db_path)
        self.options = options
        self.max_queue = max_queue
        self.parallel = parallel
        self.keep_uploads = keep_uploads
        self.pending: deque[PendingJob] = deque()
        self.running: dict = {}  # ObjectRef -> PendingJob
        self.durations: deque[float] = deque(maxlen=1000)
        self.finished = {"done": 0, "failed": 0}
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._task = None
        self.on_finish: Callable[[str, float], None] | None = None  # (status, seconds from submit), for metrics
        self.disk = DiskHealth()  # the last disk/database-full failure, for /healthz
        self.unsaved: dict[str, str] = {}  # job id -> why it failed, not yet written (the database was full)
        self._recover()

    def _recover(self) -> None:
        """After a crash (even `kill -9`): jobs left queued or running whose upload is still on disk are queued
        again and run from the top; the others are marked failed with the reason. Upload folders of finished or
        unknown jobs are deleted (unless `keep_uploads`)."""
        for job_id in self.store.unfinished_job_ids("upload"):
            job = self.store.job(job_id)
            meta, path = _upload_on_disk(self.upload_dir / job_id, job["source"])
            if path is None:
                self.store.update_job(job_id, status="failed",
                                      error="interrupted: the server stopped and the upload was lost")
                continue
            try:  # names are checked again: a model may have left the offered ones since
                models = check_models(meta.get("models", {}))
            except BadInput as exc:
                self.store.update_job(job_id, status="failed", error=f"interrupted, and then refused: {exc}")
                continue
            self.store.update_job(job_id, status="queued", progress=0.0)
            self.pending.append(PendingJob(job_id, path, meta.get("name", job["source"]), list(meta.get("queries", [])),
                                           time.perf_counter(), models))
        if not self.keep_uploads and self.upload_dir.is_dir():
            waiting = {job.job_id for job in self.pending}
            for folder in self.upload_dir.iterdir():
                if folder.is_dir() and folder.name not in waiting and _finished(self.store.job(folder.name)):
                    shutil.rmtree(folder, ignore_errors=True)

    def start(self) -> None:
        import ray

        from pipelines.spine.runtime import ensure_ray

        ensure_ray()
        self._task = ray.remote(**JOB_TASK_OPTIONS)(analyze_job)
        if self.parallel is None:
            self.parallel = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self._thread = threading.Thread(target=self._loop, name="job-manager", daemon=True)
        self._thread.start()

    def depth(self) -> tuple[int, int]:
        with self._cond:
            return len(self.pending), len(self.running)

    def submit(self, job_id: str, path: Path, name: str, queries: list[str], models: dict[str, str] | None = None) -> str:
        """Queue an upload already written to `path` (to run with its own checked `models`, else the server's);
        raises QueueFull when the queue is at its limit."""
        with self._cond:
            if len(self.pending) + len(self.running) >= self.max_queue:
                raise QueueFull(f"job queue is full ({self.max_queue} jobs); retry later")
            try:
                self.store.create_job("upload", name, job_id=job_id)
                # what a restarted server needs to run the job again (the clip itself is next to it)
                (path.parent / JOB_META).write_text(json.dumps({"name": name, "queries": list(queries),
                                                                "models": dict(models or {})}))
            except Exception as exc:
                reason = no_space_reason(exc)
                if reason is None:
                    raise
                self.disk.failed(reason)
                raise NoSpace(f"cannot accept uploads now: {reason}") from None
            self.disk.ok()
            self.pending.append(PendingJob(job_id, path, name, list(queries), time.perf_counter(), dict(models or {})))
            self._cond.notify_all()
        return job_id

    def _loop(self) -> None:
        """Runs until `close`; an error in one round is logged (a full disk also marks the server degraded) and
        the next round goes on, so the thread never dies."""
        while not self._stop.is_set():
            try:
                self._round()
            except Exception as exc:
                reason = no_space_reason(exc)
                if reason is not None:
                    self.disk.failed(reason)
                log.exception("job manager: a round failed; carrying on")
                time.sleep(0.5)

    def _round(self) -> None:
        """Start queued jobs up to `parallel`, then record the ones that finished."""
        import ray

        if self.unsaved:
            self._save_failures()
        with self._cond:
            while self.pending and len(self.running) < self.parallel:
                job = self.pending.popleft()
                ref = self._task.remote(str(job.path), job.name, job.queries, with_models(self.options, job.models),
                                        self.db_path, job.job_id, self.grounder)
                self.running[ref] = job
            if not self.running:
                self._cond.wait(0.5)
                return
            refs = list(self.running)
        ready, _ = ray.wait(refs, num_returns=1, timeout=0.2)
        for ref in ready:
            with self._cond:
                job = self.running.pop(ref)
            self._finish(job, ref)

    def _finish(self, job: PendingJob, ref) -> None:
        import ray

        try:
            result, error = ray.get(ref)
        except ray.exceptions.RayError as exc:
            result, error = None, f"worker failed: {type(exc).__name__}"
        self._record(job, result, error)

    def _record(self, job: PendingJob, result: dict | None, error: str | None) -> None:
        """Save what a job returned; a full disk or database fails the job with the reason and marks the server
        degraded, a successful write clears that."""
        try:
            record_outcome(self.store, job.job_id, result, error)
            self.disk.ok()
        except Exception as exc:
            reason = no_space_reason(exc)
            if reason is None:
                raise
            self.disk.failed(reason)
            self.unsaved[job.job_id] = f"could not save the result: {reason}"
            log.warning("job %s failed: %s", job.job_id, reason)
            result = None
        self._save_failures()
        self.finished["done" if result is not None else "failed"] += 1
        seconds = time.perf_counter() - job.submitted
        self.durations.append(seconds)
        if self.on_finish is not None:
            self.on_finish("done" if result is not None else "failed", seconds)
        if not self.keep_uploads:
            shutil.rmtree(job.path.parent, ignore_errors=True)

    def _save_failures(self) -> None:
        """Mark failed the jobs whose failure could not be written while the database was full."""
        for job_id, error in list(self.unsaved.items()):
            try:
                self.store.update_job(job_id, status="failed", error=error)
            except Exception as exc:
                if no_space_reason(exc) is None:
                    raise
                return
            self.unsaved.pop(job_id, None)

    def close(self) -> None:
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=5)
