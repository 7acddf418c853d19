"""After `kill -9` of the server: what the next start does with the jobs, streams and uploads left behind
(the state a killed server leaves is built here directly; nothing needs Ray)."""

from __future__ import annotations

import os
import signal
import sqlite3
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
    store.create_job("stream", "rtsp://***@cam/live", job_id="stream-kept")
    store.update_job("stream-kept", status="running")
    store.remember_stream("kept", "stream", "rtsp://admin:pw@cam/live", "tcp", "stream-kept")

    restarted = JobManager(store, tmp_path / "f.db", AnalyzeOptions(), max_queue=4, upload_dir=uploads)
    StreamManager(store, str(tmp_path / "f.db"), AnalyzeOptions(), 2)
    queued = {job.job_id: job for job in restarted.pending}
    assert set(queued) == {"running1", "queued1"}
    assert queued["running1"].queries == ["a dog barks"] and queued["running1"].path.name == "clip.mp4"
    assert all(store.job(j)["status"] == "queued" and store.job(j)["progress"] == 0 for j in queued)
    assert store.job("lost1")["status"] == "failed" and "interrupted" in store.job("lost1")["error"]
    stream = store.job("stream-abc")
    assert stream["status"] == "failed" and "add it again" in stream["error"]
    kept = store.job("stream-kept")  # persistent: `resume()` reconnects it under a new job
    assert kept["status"] == "failed" and "restarts under a new job" in kept["error"]
    assert [r["source"] for r in store.persistent_streams("stream")] == ["rtsp://admin:pw@cam/live"]
    assert not (uploads / "done1").exists() and not (uploads / "orphan").exists()
    assert (uploads / "running1" / "clip.mp4").exists() and (uploads / "queued1" / "clip.mp4").exists()


DOOR, GATE = "door=0.1,0.1 0.5,0.1 0.5,0.9 0.1,0.9", "gate=0.6,0,0.6,1"


@pytest.mark.slow
def test_a_killed_server_leaves_no_ray_process_and_the_next_one_resumes_persistent_streams(tmp_path, rtsp_server):
    db = tmp_path / "f.db"
    loopback = ("--source-network", "127.0.0.0/8")
    server = ApiServer(db, free_port(), *loopback)
    try:
        server.wait_ready()
        with server.client() as c:
            stream = c.post("/v1/streams", json={"source": rtsp_server.url, "rtsp_transport": "udp",
                                                 "persistent": True, "watches": ["a phone rings"],
                                                 "zones": [DOOR], "lines": [GATE], "pose": "movenet-multipose"}).json()
            assert stream["persistent"] and stream["job_id"] == f"stream-{stream['id']}"
            wait_status(c, stream["id"], "running", server)
            changed = c.put(f"/v1/streams/{stream['id']}/watches", json={"watches": ["someone shouts for help"]})
            assert changed.status_code == 200, changed.text
        ray_procs = {p: s for p, s in descendants(server.proc.pid).items()
                     if "ray" in Path(f"/proc/{p}/cmdline").read_bytes().decode("latin-1", "replace").lower()}
        assert len(ray_procs) >= 5, ray_procs  # GCS, raylet, agents, stage hosts, the stream's actors
        os.kill(server.proc.pid, signal.SIGKILL)
        server.proc.wait()
        deadline = time.time() + 30
        while time.time() < deadline and any(_alive(p, s) for p, s in ray_procs.items()):
            time.sleep(0.5)
        left = [Path(f"/proc/{p}/cmdline").read_bytes()[:80] for p, s in ray_procs.items() if _alive(p, s)]
        assert left == []
    finally:
        server.stop()

    rtsp_server.kill()  # down when the server comes back (a power cut: the camera boots slower than the server)
    again = ApiServer(db, free_port(), *loopback)  # the same database: the stream comes back under a new job
    try:
        again.wait_ready()
        with again.client() as c:
            time.sleep(2.0)  # the resumed stream tries the camera that is down (it failed at once, and was forgotten)
            assert c.get(f"/v1/streams/{stream['id']}").json()["status"] in ("starting", "running"), again.tail()
            rtsp_server.start()
            info = c.get(f"/v1/streams/{stream['id']}").json()
            assert info["persistent"] and info["job_id"] == f"stream-{stream['id']}-r1", info
            # It comes back as it was left: the watches changed while it ran, its zone, its line and its pose.
            assert (info["watches"], info["zones"], info["lines"]) == (["someone shouts for help"], [DOOR], [GATE])
            assert info["pose"] == "movenet-multipose", info
            old = c.get(f"/v1/jobs/{stream['job_id']}").json()
            assert old["status"] == "failed" and "restarts under a new job" in old["error"]
            wait_status(c, stream["id"], "running", again)
            deadline = time.time() + 120  # the camera is back: its seconds come (a bound on the wait)
            while c.get(f"/v1/streams/{stream['id']}").json()["health"].get("segments_emitted", 0) < 2:
                assert time.time() < deadline, again.tail()
                time.sleep(0.5)
            assert c.delete(f"/v1/streams/{stream['id']}").json()["status"] == "stopped"
        with sqlite3.connect(db) as con:  # removed by the user: not reconnected by a third server
            assert con.execute("SELECT COUNT(*) FROM stream_restarts").fetchone()[0] == 0
    finally:
        again.stop()


def wait_status(client, stream_id: str, status: str, server: ApiServer, timeout: float = 300) -> None:
    deadline = time.time() + timeout  # model actors load in the background (slow on a loaded machine)
    while (now := client.get(f"/v1/streams/{stream_id}").json()["status"]) != status and time.time() < deadline:
        assert now in ("starting", "running"), server.tail()
        time.sleep(0.5)
    assert now == status, server.tail()


def test_the_reaper_finds_what_the_owner_started_by_its_token():
    """A process started after the reaper carries its token, so it is ended even when nobody saw it: its
    parent (e.g. a raylet) may be gone by then, and it is no longer anyone's descendant."""
    import subprocess
    import sys

    from pipelines.spine.reaper import TOKEN_VARIABLE, marked

    token = f"test-{os.getpid()}-{time.time_ns()}"
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                             env={**os.environ, TOKEN_VARIABLE: token})
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                             env={**os.environ, TOKEN_VARIABLE: token + "x"})
    try:
        assert set(marked(token)) == {child.pid}
    finally:
        for p in (child, other):
            p.kill()
            p.wait()
