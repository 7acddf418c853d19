"""A stream's `recorded` says whether `GET /v1/jobs/{job_id}/clip` has something to play, against a real
`foresight serve` on loopback (recording on, as by default) and sources served over HTTP on loopback: a plain HTTP
file is read as a file and never recorded, a stream that failed before it connected recorded nothing, and a live
source (an HLS playlist) is recorded and its clip plays."""

from __future__ import annotations

import time

import pytest

from tests.helpers.api_server import ApiServer, wait_until_not
from tests.helpers.cli import free_port

NO_RECORDING = {"detail": "this job has no recording (only live streams are recorded)"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rec-api")
    srv = ApiServer(folder / "f.db", free_port(), "--no-asr", "--source-network", "127.0.0.0/8")
    try:
        srv.wait_ready()
        yield srv
    finally:
        srv.stop()


def listed(c, stream_id: str) -> dict:
    return next(s for s in c.get("/v1/streams").json() if s["id"] == stream_id)


def test_a_plain_http_file_is_not_recorded_and_says_so(server, http_root):
    with server.client() as c:
        r = c.post("/v1/streams", json={"source": f"{http_root}/clip.mp4"})
        assert r.status_code == 202, r.text
        stream = r.json()
        assert stream["status"] == "starting" and stream["recorded"] is False
        info = wait_until_not(c, stream["id"], ("starting",))
        assert info["status"] in ("running", "ended"), (info, server.tail())
        assert info["recorded"] is False and listed(c, stream["id"])["recorded"] is False
        info = wait_until_not(c, stream["id"], ("starting", "running"))
        assert info["status"] == "ended" and info["recorded"] is False, info
        clip = c.get(f"/v1/jobs/{stream['job_id']}/clip", params={"start": 0, "end": 5})
        assert clip.status_code == 404 and clip.json() == NO_RECORDING
        assert c.delete(f"/v1/streams/{stream['id']}").json()["recorded"] is False


def test_a_stream_that_failed_before_it_connected_recorded_nothing(server):
    with server.client() as c:
        r = c.post("/v1/streams", json={"source": f"http://127.0.0.1:{free_port()}/gone.mp4"})
        assert r.status_code == 202, r.text
        stream = r.json()
        info = wait_until_not(c, stream["id"], ("starting", "running"))
        assert info["status"] == "failed" and info["recorded"] is False, info
        assert listed(c, stream["id"])["recorded"] is False
        clip = c.get(f"/v1/jobs/{stream['job_id']}/clip", params={"start": 0, "end": 5})
        assert clip.status_code == 404 and clip.json() in (NO_RECORDING, {"detail": "no such job"})
        c.delete(f"/v1/streams/{stream['id']}")


def test_a_live_source_is_recorded_and_its_clip_plays(server, http_root):
    with server.client() as c:
        r = c.post("/v1/streams", json={"source": f"{http_root}/live.m3u8"})
        assert r.status_code == 202, r.text
        stream = r.json()
        try:
            info = wait_until_not(c, stream["id"], ("starting",))
            assert info["status"] == "running" and info["recorded"] is True, (info, server.tail())
            assert listed(c, stream["id"])["recorded"] is True
            url, deadline = f"/v1/jobs/{stream['job_id']}/clip", time.monotonic() + 120
            while (clip := c.get(url, params={"start": 0, "end": 5})).status_code == 404 and time.monotonic() < deadline:
                time.sleep(0.5)  # until the recorder closed its first segment
            assert clip.status_code == 200 and clip.headers["content-type"] == "video/mp4", clip.text
        finally:
            gone = c.delete(f"/v1/streams/{stream['id']}")
        assert gone.json()["status"] == "stopped" and gone.json()["recorded"] is True
