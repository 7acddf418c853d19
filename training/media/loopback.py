"""A clip streamed in real time over RTSP on loopback: live sources for the tests and the latency benchmark."""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import psutil

RTP_PORTS = 8  # RTP and RTCP for up to four streams from the server's start port


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_rtp_range() -> int:
    """A start port whose RTP_PORTS UDP ports are free now, below Linux's ephemeral range (32768 up).

    Each server relays RTP on its own port range, so servers left by other runs cannot steal the packets.
    """
    for _ in range(200):
        start = random.randrange(20_000, 32_000, 20)
        socks = []
        try:
            for port in range(start, start + RTP_PORTS):
                sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                socks.append(sock)
                sock.bind(("127.0.0.1", port))
            return start
        except OSError:
            continue
        finally:
            for sock in socks:
                sock.close()
    raise RuntimeError("no free UDP port range between 20000 and 32000 for the RTSP test server")


class RtspServer:
    """Debian's rtsp-server-perl on loopback, fed by ffmpeg looping a clip in real time (UDP transport to clients)."""

    def __init__(self, clip: Path):
        self.clip = clip
        self.client_port = free_port()
        self.source_port = free_port()
        self.rtp_start_port = free_rtp_range()
        self.served = False  # published once: a restart keeps the URL its clients have
        self.procs: list[subprocess.Popen] = []
        self.logs: list = []

    @property
    def url(self) -> str:
        return f"rtsp://127.0.0.1:{self.client_port}/live"

    def start(self, attempts: int = 3, publish_timeout_s: float = 15.0) -> None:
        """Serve the clip, returning once the stream is published (clients get 404 before that).

        The server answers the feeding ffmpeg's RECORD with 404, and ffmpeg exits, when one of its RTP ports is
        taken (by another run's server or any UDP socket on a busy machine): then a new port range is tried.
        """
        reason = ""
        for _ in range(attempts):
            reason = self._start_once(publish_timeout_s)
            if not reason:
                self.served = True
                return
            self.kill()
            self.rtp_start_port = free_rtp_range()
            if not self.served:  # a TCP port taken since it was picked (exit 98, a suite beside this one): new
                self.client_port, self.source_port = free_port(), free_port()  # ones while no client has the URL
        raise RuntimeError(f"RTSP test server on port {self.client_port} did not publish {self.clip.name}: {reason}")

    def _start_once(self, publish_timeout_s: float) -> str:
        """Start the server and its feeding ffmpeg; the reason it did not publish, or "" once it has."""
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
        pusher, log = self._feed()
        # Published means the server has bound the UDP ports it receives the clip's RTP on (after RECORD).
        deadline = time.time() + publish_timeout_s
        while time.time() < deadline:
            if pusher.poll() is not None:
                log.seek(0)
                return f"the feeding ffmpeg exited ({log.read().decode(errors='replace').strip()[-300:]})"
            if server.poll() is not None:
                return f"rtsp-server-perl exited ({server.returncode})"
            try:
                ports = {c.laddr.port for c in psutil.Process(server.pid).net_connections("udp4")}
            except psutil.Error:
                ports = set()
            if any(self.rtp_start_port <= port < self.rtp_start_port + RTP_PORTS for port in ports):
                time.sleep(0.5)  # the first packets reach the server
                return ""
            time.sleep(0.1)
        return f"not published within {publish_timeout_s:.0f} s"

    def _feed(self) -> tuple[subprocess.Popen, object]:
        """The ffmpeg that publishes the clip to the server, in real time and looped."""
        log = tempfile.TemporaryFile()  # a file, not a pipe: a long run's messages cannot block ffmpeg
        self.logs.append(log)
        pusher = subprocess.Popen(
            ["ffmpeg", "-nostdin", "-loglevel", "error", "-re", "-stream_loop", "-1", "-i", str(self.clip),
             "-c", "copy", "-f", "rtsp", f"rtsp://127.0.0.1:{self.source_port}/live"],
            stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
        self.procs.append(pusher)
        return pusher, log

    def silence(self) -> None:
        """Stop the feed and keep the server: a camera whose encoder died while its RTSP server still answers."""
        pusher = self.procs.pop()
        os.killpg(pusher.pid, signal.SIGKILL)
        pusher.wait(timeout=10)

    def resume(self) -> None:
        """Feed the server again after `silence`."""
        self._feed()

    def kill(self) -> None:
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(timeout=10)
        self.procs.clear()
        for log in self.logs:
            log.close()
        self.logs.clear()
