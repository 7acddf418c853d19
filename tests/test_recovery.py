"""After `kill -9` of the server: what the next start does with the jobs, streams and uploads left behind
(the state a killed server leaves is built here directly; nothing needs Ray)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from app.services.jobs import JobManager
from app.services.streams import StreamManager
from pipelines import AnalyzeOptions
from pipelines.sinks.store import Store
from pipelines.spine.reaper import _alive, descendants
from tests.helpers.api_server import ApiServer
from tests.helpers.cli import free_port


def test_restart_requeues_uploads_ends_streams_and_deletes_finished_uploads(tmp_path):
    store = Store(tmp_path / "f.db")
    uploads = tmp_path / "uploads"
    manager = JobManager(store, tmp_path / "f.db", AnalyzeOptions(), max_queue=4, upload_dir=uploads)
    for job_id, status in (("running1", "running"), ("queued1", "queued"), ("lost1", "running"), ("done1", "done")):
        if job_id != "lost1":
            (uploads / job_id).mkdir(parents=True)
            (uploads / job_id / "clip.mp4").write_bytes(b"x")
        if job_id in ("running1", "queued1"):  # the way the server stored them
            manager_path = uploads / job_id / "clip.mp4"
            manager.submit(job_id, manager_path, "clip.mp4", ["a dog barks"])
            manager.pending.clear()
        else:
            store.create_job("upload", "clip.mp4", job_id=job_id)
        store.update_job(job_id, status=status, progress=0.999 if status == "running" else None)
    (uploads / "orphan").mkdir()
    (uploads / "orphan" / "x.mp4").write_bytes(b"x")
    store.create_job("stream", "rtsp://***@cam/live", job_id="stream-abc")
    store.update_job("stream-abc", status="running")

    restarted = JobManager(store, tmp_path / "f.db", AnalyzeOptions(), max_queue=4, upload_dir=uploads)
    StreamManager(store, str(tmp_path / "f.db"), AnalyzeOptions(), 2)
    queued = {job.job_id: job for job in restarted.pending}
    assert set(queued) == {"running1", "queued1"}
    assert queued["running1"].queries == ["a dog barks"] and queued["running1"].path.name == "clip.mp4"
    assert all(store.job(j)["status"] == "queued" and store.job(j)["progress"] == 0 for j in queued)
    assert store.job("lost1")["status"] == "failed" and "interrupted" in store.job("lost1")["error"]
    stream = store.job("stream-abc")
    assert stream["status"] == "failed" and "interrupted" in stream["error"]
    assert not (uploads / "done1").exists() and not (uploads / "orphan").exists()
    assert (uploads / "running1" / "clip.mp4").exists() and (uploads / "queued1" / "clip.mp4").exists()


@pytest.mark.slow
def test_no_ray_process_outlives_a_killed_server(tmp_path):
    server = ApiServer(tmp_path / "f.db", free_port())
    try:
        server.wait_ready()
        time.sleep(3)  # the agents start a moment after the raylet
        ray_procs = {p: s for p, s in descendants(server.proc.pid).items()
                     if "ray" in Path(f"/proc/{p}/cmdline").read_bytes().decode("latin-1", "replace").lower()}
        assert len(ray_procs) >= 3, ray_procs
        os.kill(server.proc.pid, signal.SIGKILL)
        server.proc.wait()
        deadline = time.time() + 30
        while time.time() < deadline and any(_alive(p, s) for p, s in ray_procs.items()):
            time.sleep(0.5)
        left = [Path(f"/proc/{p}/cmdline").read_bytes()[:80] for p, s in ray_procs.items() if _alive(p, s)]
        assert left == []
    finally:
        server.stop()
