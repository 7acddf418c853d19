"""Shared fixtures: media built from package-carried sources, a Ray runtime, an RTSP server on loopback."""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[1]
FORESIGHT = [sys.executable, "-m", "app.cli"]


@pytest.fixture(scope="session")
def media_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("media")


@pytest.fixture(scope="session")
def demo_clip(media_dir):
    from pipelines.synth import build_demo_clip

    path = media_dir / "demo.mp4"
    truth = build_demo_clip(path)
    return path, truth


@pytest.fixture(scope="session")
def ray_runtime():
    from pipelines.runtime import ensure_ray, shutdown_ray

    ensure_ray()
    yield
    shutdown_ray()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_cli(*args: str, timeout: float = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*FORESIGHT, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


class RtspServer:
    """Debian's rtsp-server-perl on loopback, fed by ffmpeg looping a clip in real time (UDP transport to clients)."""

    def __init__(self, clip: Path):
        self.clip = clip
        self.client_port = free_port()
        self.source_port = free_port()
        # Each server relays RTP on its own port range, so servers left by other runs cannot steal the packets.
        self.rtp_start_port = random.randrange(20_000, 60_000, 20)
        self.procs: list[subprocess.Popen] = []

    @property
    def url(self) -> str:
        return f"rtsp://127.0.0.1:{self.client_port}/live"

    def start(self) -> None:
        server = subprocess.Popen(
            ["rtsp-server-perl", "--clientport", str(self.client_port), "--serverport", str(self.source_port),
             "--client_listen_address", "127.0.0.1", "--source_listen_address", "127.0.0.1",
             "--rtp_start_port", str(self.rtp_start_port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        self.procs.append(server)
        # Wait for the listening socket without connecting to it: a connection that closes makes the server
        # tidy up and fall back to its default RTP ports, which servers left by other runs may hold.
        deadline = time.time() + 10
        while time.time() < deadline and not any(
                c.laddr.port == self.source_port and c.status == psutil.CONN_LISTEN
                for c in psutil.net_connections("tcp4")):
            time.sleep(0.1)
        pusher = subprocess.Popen(
            ["ffmpeg", "-nostdin", "-loglevel", "error", "-re", "-stream_loop", "-1", "-i", str(self.clip),
             "-c", "copy", "-f", "rtsp", f"rtsp://127.0.0.1:{self.source_port}/live"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        self.procs.append(pusher)
        time.sleep(1.5)

    def kill(self) -> None:
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(timeout=10)
        self.procs.clear()


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
