"""A full database (SQLite's own `database or disk is full`, forced with `PRAGMA max_page_count` on the real
store) is 507 `{"detail"}` with /healthz "degraded"; the job whose result cannot be saved fails with the reason,
nothing raises out of the job manager, and uploads and results work again once space returns."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from types import SimpleNamespace

import pytest
from fastapi.testclient import TestClient

from app.api.app import create_app
from app.api.metrics import Metrics
from app.services.jobs import JobManager
from app.services.settings import Settings
from app.services.streams import StreamManager
from pipelines.sinks.store import Store

DEMO = Path(__file__).resolve().parents[1] / "data" / "demo.mp4"


@pytest.fixture()
def server(tmp_path):
    if not DEMO.exists():
        pytest.skip("data/demo.mp4 is not there (./scripts/demo.sh makes it)")
    settings = Settings(db_path=tmp_path / "f.db", upload_dir=tmp_path / "uploads")
    app = create_app(settings)  # no lifespan: a real store and job manager, the manager's thread not started
    store = Store(settings.db_path)
    jobs = JobManager(store, settings.db_path, settings.options, 4, 1, upload_dir=settings.upload_dir)
    streams = StreamManager(store, str(settings.db_path), settings.options, 2, policy=settings.source_policy)
    app.state.services = SimpleNamespace(settings=settings, store=store, jobs=jobs, streams=streams,
                                         metrics=Metrics(jobs, streams), search=None)
    client = TestClient(app, raise_server_exceptions=False)
    client.base_url = "http://127.0.0.1"
    yield client, store, jobs
    store.close()


def _fill(store: Store) -> None:
    """No page may be added to the database, and the free room in its pages is used up (rows of shrinking size
    until SQLite itself says full): the next write that needs room gets SQLITE_FULL."""
    pages = store.db.execute("PRAGMA page_count").fetchone()[0]
    store.db.execute(f"PRAGMA max_page_count={pages}")
    for size in (400, 50, 1):
        for _ in range(100_000):
            try:
                store.create_job("upload", "x" * size)
            except sqlite3.OperationalError as exc:
                assert "full" in str(exc)
                break


def _free(store: Store) -> None:
    store.db.execute("PRAGMA max_page_count=1073741823")


def _upload(client):
    return client.post("/v1/analyze", files={"file": ("demo.mp4", DEMO.read_bytes(), "video/mp4")})


def test_full_database_is_507_degraded_and_recovers(server):
    client, store, jobs = server
    # a few jobs first so that the table's pages are full, then no new page
    for _ in range(3):
        assert _upload(client).status_code == 202
    _fill(store)
    r = _upload(client)
    assert r.status_code == 507, r.text
    assert "full" in r.json()["detail"]
    health = client.get("/healthz").json()
    assert health["status"] == "degraded" and "full" in health["reason"]

    _free(store)
    r = _upload(client)
    assert r.status_code == 202, r.text
    assert client.get("/healthz").json() == {**health, "status": "ok", "reason": None,
                                             "jobs_queued": len(jobs.pending)}


def test_a_result_that_cannot_be_saved_fails_the_job_and_later_jobs_finish(server):
    client, store, jobs = server
    first = _upload(client).json()["job_id"]
    second = _upload(client).json()["job_id"]
    pending = {job.job_id: job for job in jobs.pending}
    result = {"source": "demo.mp4", "events": [{"label": "Speech " * 50, "modality": "audio", "start": i,
                                                "end": i + 1, "confidence": 0.9} for i in range(500)]}
    _fill(store)
    jobs._record(pending[first], result, None)  # what the manager's thread does with a finished task
    assert "full" in jobs.unsaved[first]  # not even "failed" fits now; it is written once there is room
    assert client.get("/healthz").json()["status"] == "degraded"

    _free(store)
    jobs._record(pending[second], result, None)
    job = client.get(f"/v1/jobs/{first}").json()
    assert job["status"] == "failed" and "could not save the result: database or disk is full" in job["error"]
    assert client.get(f"/v1/jobs/{second}").json()["status"] == "done"
    assert client.get("/healthz").json()["status"] == "ok"


def test_uploads_are_owner_only(server):
    """Uploaded clips are 0600 in 0700 folders (they were 0644 under the umask)."""
    client, _, jobs = server
    client.app.state.services.settings.upload_dir.mkdir(mode=0o755)  # as an older server left it
    job_id = _upload(client).json()["job_id"]
    path = next(job.path for job in jobs.pending if job.job_id == job_id)
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700


def test_an_upload_with_no_decodable_frame_is_refused_at_once(server, tmp_path):
    """An MP4 that holds its moov but no media data probes fine but decodes nothing: 422 with the reason, as the
    CLI's preflight refuses it (exit 2), not 202 and a failed job later."""
    import subprocess

    clip = tmp_path / "a.mp4"
    subprocess.run(["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=10", "-t", "2",
                    "-movflags", "+faststart", "-pix_fmt", "yuv420p", str(clip)], check=True, timeout=60)
    data = clip.read_bytes()
    moov_only = data[:data.find(b"mdat") + 8]
    client, _, jobs = server
    r = client.post("/v1/analyze", files={"file": ("moov.mp4", moov_only, "video/mp4")})
    assert r.status_code == 422 and "no decodable audio or video" in r.json()["detail"], r.text
    assert not jobs.pending
    r = client.post("/v1/analyze", files={"file": ("a.mp4", data, "video/mp4")})
    assert r.status_code == 202, r.text


@pytest.fixture()
def tiny_upload_dir(tmp_path):
    """A 1 MiB tmpfs for the upload folder (needs root and mount permission; skipped otherwise)."""
    import subprocess

    mnt = tmp_path / "tiny"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    yield mnt
    subprocess.run(["umount", str(mnt)], check=False)


def test_a_full_upload_disk_is_507_and_recovers(server, tiny_upload_dir):
    """ENOSPC while the upload is written (a real 1 MiB filesystem, a 1.3 MB clip): 507, degraded, no leftovers;
    with room again (a small clip) the next upload is 202 and /healthz ok."""
    import subprocess

    client, _, jobs = server
    client.app.state.services.settings.upload_dir = tiny_upload_dir
    r = _upload(client)
    assert r.status_code == 507 and "ENOSPC" in r.json()["detail"], r.text
    assert client.get("/healthz").json()["status"] == "degraded"
    assert not any(tiny_upload_dir.iterdir())
    small = tiny_upload_dir.parent / "small.mp4"
    subprocess.run(["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=10", "-t", "2",
                    "-pix_fmt", "yuv420p", str(small)], check=True, timeout=60)
    r = client.post("/v1/analyze", files={"file": ("small.mp4", small.read_bytes(), "video/mp4")})
    assert r.status_code == 202, r.text
    assert client.get("/healthz").json()["status"] == "ok"
