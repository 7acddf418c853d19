"""A clip's or a stream's own detector and pose over the REST API, against a real uvicorn server on loopback."""

from __future__ import annotations

import json

import pytest

from pipelines.sinks.results import stable_view
from tests.helpers.api_server import ApiServer, wait_job
from tests.helpers.cli import free_port, run_cli

SERVER_FLAGS = ("--no-asr", "--pose", "movenet-multipose", "--source-network", "127.0.0.0/8")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = ApiServer(tmp_path_factory.mktemp("api_models") / "f.db", free_port(), *SERVER_FLAGS)
    try:
        srv.wait_ready()
        yield srv
    finally:
        srv.stop()


def post_clip(client, path, **fields):
    return client.post("/v1/analyze", files={"file": (path.name, path.read_bytes(), "video/mp4")}, data=fields)


@pytest.mark.slow
def test_a_clip_runs_with_its_own_detector_and_pose_as_the_cli_does(server, demo_clip, tmp_path):
    """The fields beat the server's flags: the server runs SSD and MoveNet, the job NanoDet and MediaPipe, and its
    result is the CLI's with those flags (it would differ in objects and postures had the fields been dropped)."""
    path, _ = demo_clip
    with server.client() as c:
        r = post_clip(c, path, detector="nanodet", pose="mediapipe")
        assert r.status_code == 202, r.text
        job = wait_job(c, r.json()["job_id"])
        assert job["status"] == "done", job
        result = c.get(f"/v1/jobs/{job['job_id']}/result").json()
    out = tmp_path / "cli.json"
    proc = run_cli("analyze", str(path), "--no-asr", "--detector", "nanodet", "--pose", "mediapipe", "--out", str(out),
                   "-q")
    assert proc.returncode == 0, proc.stderr
    assert stable_view(result) == stable_view(json.loads(out.read_text()))


@pytest.mark.slow
def test_unknown_model_names_are_422_naming_the_field_and_the_choices(server, demo_clip):
    path, _ = demo_clip
    with server.client() as c:
        cases = {
            "pose": (post_clip(c, path, pose="openpose"),
                     "pose: unknown name; choose one of: mediapipe, movenet-multipose"),  # never the value
            "detector": (post_clip(c, path, detector="yolo9"),
                         "detector: unknown name; choose one of: yolov3-tiny, ssd-mobilenetv2, nanodet, "
                         "ssd-mobilenetv2+nanodet"),
            "two poses": (post_clip(c, path, pose=["mediapipe", "movenet-multipose"]), "pose: give one name, not 2"),
        }
        for name, (resp, reason) in cases.items():
            assert resp.status_code == 422 and resp.json()["detail"] == reason, (name, resp.text)
        r = c.post("/v1/streams", json={"source": f"rtsp://127.0.0.1:{free_port()}/cam", "pose": "openpose"})
        assert r.status_code == 422 and r.json()["detail"].endswith(cases["pose"][1]), r.text
        assert "openpose" not in r.text
        assert c.get("/v1/streams").json() == []
    assert not list((server.db.parent / "uploads").rglob("*.mp4"))  # refused uploads leave nothing behind


@pytest.mark.slow
def test_a_stream_runs_with_its_own_detector_and_the_servers_pose(server):
    with server.client() as c:
        r = c.post("/v1/streams", json={"source": f"rtsp://127.0.0.1:{free_port()}/cam", "detector": "nanodet"})
        assert r.status_code == 202, r.text
        stream = r.json()
        assert (stream["detector"], stream["pose"]) == ("nanodet", "movenet-multipose")
        listed = c.get(f"/v1/streams/{stream['id']}").json()
        assert (listed["detector"], listed["pose"]) == ("nanodet", "movenet-multipose")
        assert c.delete(f"/v1/streams/{stream['id']}").status_code == 200
