"""After `kill -9` of the server: what the next start does with the jobs, streams and uploads left behind
(the state a killed server leaves is built here directly; nothing needs Ray)."""

from __future__ import annotations

from app.services.jobs import JobManager
from app.services.streams import StreamManager
from pipelines import AnalyzeOptions
from pipelines.sinks.store import Store


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
