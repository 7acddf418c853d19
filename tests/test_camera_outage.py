"""A camera of `serve` that goes away for longer than the old 30-s budget: the stream says "reconnecting" (since
when, why), keeps trying with capped backoff, resumes as the same stream and job when the camera comes back,
reports the outage with its true length, and Stop of the last stream ends every stage process it started.

Real parts: rtsp-server-perl fed by ffmpeg on loopback (killed and started again on the same ports), the API
server in its own process, its Ray actors counted in its own process tree (other Ray sessions on the machine
are not looked at)."""

from __future__ import annotations

import time

import psutil
import pytest

from tests.helpers.api_server import ApiServer
from tests.helpers.cli import free_port
from tests.helpers.dashboard import pipeline_actors
from training.media.loopback import RtspServer

OUTAGE_S = 40  # longer than the budget that used to drop a camera (30 s)


def stream_actors(root_pid: int) -> dict[int, str]:
    """The stage hosts and stream actors of the server's own Ray session (its process tree)."""
    return pipeline_actors(root_pid, ("StageHost", "IngestActor"))


def wait_for(client, sid: str, server: ApiServer, ok, what: str, timeout: float) -> dict:
    deadline = time.time() + timeout
    while time.time() < deadline:
        info = client.get(f"/v1/streams/{sid}").json()
        if ok(info):
            return info
        assert info["status"] in ("starting", "running", "reconnecting"), (info, server.tail())
        time.sleep(0.5)
    raise AssertionError(f"{what}: {info}\n{server.tail()}")


@pytest.mark.slow
def test_a_camera_away_for_40_s_resumes_as_the_same_stream_and_stop_ends_its_processes(tmp_path, demo_clip,
                                                                                        monkeypatch):
    monkeypatch.setenv("FORESIGHT_HOST_LINGER_S", "2")  # the hosts end 2 s after the last stream (default 30)
    camera = RtspServer(demo_clip[0])
    camera.start()
    # no --reconnect-budget: the default of `serve` is to retry forever; a short backoff cap keeps the test quick
    server = ApiServer(tmp_path / "f.db", free_port(), "--source-network", "127.0.0.0/8", "--no-asr",
                       "--reconnect-max-delay", "1")
    try:
        server.wait_ready()
        baseline = stream_actors(server.proc.pid)
        assert baseline == {}
        with server.client() as c:
            sid = c.post("/v1/streams", json={"source": camera.url, "rtsp_transport": "udp"}).json()["id"]
            info = wait_for(c, sid, server, lambda i: i["status"] == "running"
                            and i["health"].get("segments_emitted", 0) >= 3, "running with seconds", 300)
            job_id = info["job_id"]
            started = stream_actors(server.proc.pid)
            assert any("StageHost" in t for t in started.values()), started

            camera.kill()
            killed_at = time.time()
            info = wait_for(c, sid, server, lambda i: i["status"] == "reconnecting", "reconnecting", 30)
            assert info["health"]["last_error"] and info["health"]["outage_since"] <= killed_at + 1
            time.sleep(max(0.0, killed_at + OUTAGE_S - time.time()))
            info = c.get(f"/v1/streams/{sid}").json()
            assert info["status"] == "reconnecting" and info["job_id"] == job_id, info  # not dropped after 30 s
            before = info["health"]["segments_emitted"]

            camera.start()  # the same ports: the camera is back
            back_at = time.time() - 1.5  # start() waits 1.5 s after the camera's pusher starts
            info = wait_for(c, sid, server, lambda i: i["status"] == "running"
                            and i["health"]["segments_emitted"] >= before + 3, "resumed with new seconds", 120)
            assert info["job_id"] == job_id and info["health"]["reconnects"] == 1
            (lost_from, lost_to), = info["health"]["lost_intervals"]
            real = back_at - killed_at
            # the last data came within a fraction of a second of the kill; the reconnect within the 1-s backoff
            # cap (plus jitter, the RTSP handshake and the pusher's first keyframe) of the camera coming back. The
            # upper slack is wide: on a loaded 2-core runner the camera's pusher took ~4 s more to send again
            # (45.3 s for 40.8 s). The defect this guards against reported much less than the outage (12 s -> 4.5 s)
            assert real - 1.5 <= lost_to - lost_from <= real + 8, (lost_to - lost_from, real)
            assert info["health"]["outage_since"] is None

            assert c.delete(f"/v1/streams/{sid}").json()["status"] == "stopped"
        deadline = time.time() + 30
        while time.time() < deadline and stream_actors(server.proc.pid):
            time.sleep(0.5)
        assert stream_actors(server.proc.pid) == baseline
        def alive() -> list[tuple]:
            left = []
            for pid in started:
                try:
                    proc = psutil.Process(pid)
                    left.append((pid, proc.status(), " ".join(proc.cmdline())[:60], proc.memory_info().rss >> 20))
                except psutil.Error:
                    pass
            return [entry for entry in left if entry[1] != psutil.STATUS_ZOMBIE]

        deadline = time.time() + 20  # a process caught mid-exit (no command line, no memory yet) gets to finish
        while alive() and time.time() < deadline:
            time.sleep(0.5)
        assert not alive(), alive()
    finally:
        server.stop()
        camera.kill()
