"""A clip streamed in real time over RTSP on loopback: live sources for the tests and the latency benchmark."""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import time
from pathlib import Path

import psutil


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]



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
