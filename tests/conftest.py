"""Shared fixtures: media built from package-carried sources, a Ray runtime, an RTSP server on loopback."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from tests.helpers import loopback_guard
from tests.helpers.cli import ROOT, free_port
from training.media.loopback import RtspServer


def pytest_configure(config) -> None:
    loopback_guard.install()  # no test reaches past loopback, whatever a policy under test allows
    # Stage hosts end 30 s after their last stream by default; tests that come minutes apart reuse them instead
    # of loading the models again (test_camera_outage sets its own, short value to check the ending).
    os.environ.setdefault("FORESIGHT_HOST_LINGER_S", "600")
    from pipelines.spine.threads import pin_threads

    pin_threads()  # in-process runs give the numbers the CLI and the API give


@pytest.fixture(scope="session")
def media_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("media")


@pytest.fixture(scope="session")
def demo_clip(media_dir):
    from training.media.synth import build_demo_clip

    path = media_dir / "demo.mp4"
    truth = build_demo_clip(path)
    return path, truth


@pytest.fixture(scope="session")
def ray_runtime():
    from pipelines.spine.runtime import ensure_ray, shutdown_ray

    ensure_ray()
    yield
    shutdown_ray()


@pytest.fixture
def rtsp_server(demo_clip):
    if shutil.which("rtsp-server-perl") is None or shutil.which("ffmpeg") is None:
        pytest.fail("rtsp-server-perl and ffmpeg are required (scripts/bootstrap.sh installs them)")
    server = RtspServer(demo_clip[0])
    server.start()
    yield server
    server.kill()


@pytest.fixture
def rtsp_tcp_server(demo_clip):
    """GStreamer's RTSP server (Debian gir1.2-gst-rtsp-server-1.0), which serves RTP interleaved over TCP."""
    port = free_port()
    proc = subprocess.Popen(["/usr/bin/python3", str(ROOT / "tests" / "tools" / "gst_rtsp_server.py"), str(port),
                             str(demo_clip[0])], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    line = proc.stdout.readline()
    if "serving" not in line:
        proc.kill()
        pytest.fail(f"GStreamer RTSP server did not start: {line}{proc.stdout.read()[-500:]}")
    yield f"rtsp://127.0.0.1:{port}/live"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    proc.stdout.close()


@pytest.fixture(scope="session")
def http_root(tmp_path_factory, demo_clip):
    """The demo clip over HTTP on loopback: `clip.mp4`, a finished HLS playlist `index.m3u8` (a recording) and
    `live.m3u8`, the same segments without the end (a broadcast)."""
    from tests.helpers.web import serve_files

    root = tmp_path_factory.mktemp("www")
    (root / "clip.mp4").write_bytes(demo_clip[0].read_bytes())
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", str(demo_clip[0]), "-c", "copy", "-f", "hls",
                    "-hls_time", "2", "-hls_playlist_type", "vod", str(root / "index.m3u8")], check=True)
    vod = (root / "index.m3u8").read_text().splitlines()
    (root / "live.m3u8").write_text("\n".join(line for line in vod if line not in ("#EXT-X-ENDLIST",
                                                                                   "#EXT-X-PLAYLIST-TYPE:VOD")) + "\n")
    server = serve_files(root)
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
