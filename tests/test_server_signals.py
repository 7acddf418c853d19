"""`foresight serve` ends cleanly on SIGTERM (what systemd, Docker and Kubernetes send) and SIGINT (Ctrl-C): exit
without an error or a traceback, and a live stream's SSE clients get the stream's end before the server goes."""

from __future__ import annotations

import json
import signal
import sqlite3
import threading

import httpx
import pytest

from tests.helpers.api_server import ApiServer, wait_until_not
from tests.helpers.cli import free_port


def test_sigterm_shuts_down_cleanly(tmp_path):
    server = ApiServer(tmp_path / "f.db", free_port())
    try:
        server.wait_ready()
        server.proc.send_signal(signal.SIGTERM)  # the server process only, as a service manager does
        code = server.proc.wait(timeout=60)
        log = server.tail()
    finally:
        server.stop()
    assert code == 0, log
    assert "Traceback" not in log and "ERROR" not in log, log


class FeedReader(threading.Thread):
    """An SSE client of one stream's events feed, in the background: every (event, data) it received."""

    def __init__(self, server: ApiServer, stream_id: str):
        super().__init__(daemon=True)
        self.url = f"{server.url}/v1/streams/{stream_id}/events"
        self.received: list[tuple[str, dict]] = []
        self.ticking = threading.Event()  # a second was analysed and sent: the feed is live
        self.closed = threading.Event()

    def run(self) -> None:
        event = None
        try:
            with httpx.stream("GET", self.url, timeout=httpx.Timeout(10, read=120)) as feed:
                for line in feed.iter_lines():
                    if line.startswith("event: "):
                        event = line[7:]
                    elif line.startswith("data: "):
                        self.received.append((event, json.loads(line[6:])))
                        if event == "tick":
                            self.ticking.set()
        except httpx.HTTPError as exc:
            self.received.append(("client error", {"error": repr(exc)}))
        finally:
            self.closed.set()


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_stopping_the_server_ends_its_sse_feeds(tmp_path, rtsp_server, sig):
    """QA: with a client on a stream's events feed, SIGTERM (or SIGINT) stalled for uvicorn's 10-s graceful wait,
    logged "Cancel 1 running task(s), timeout graceful shutdown exceeded" and a CancelledError traceback, and the
    client never got `event: end`: the feed waited for the stream to stop, the streams were stopped only after the
    open connections closed. Now the feed ends with `event: end` and the stream's final status, the job is saved
    as stopped, and the server exits without an error."""
    server = ApiServer(tmp_path / "f.db", free_port(), "--source-network", "127.0.0.0/8", "--no-asr")
    try:
        server.wait_ready()
        with server.client() as c:
            stream = c.post("/v1/streams", json={"source": rtsp_server.url, "rtsp_transport": "udp"}).json()
            info = wait_until_not(c, stream["id"], ("starting",), timeout=300)
            assert info["status"] == "running", (info, server.tail())
        reader = FeedReader(server, stream["id"])
        reader.start()
        assert reader.ticking.wait(120), (reader.received, server.tail())
        server.proc.send_signal(sig)  # the server process only, as a service manager (or `kill -INT`) does
        server.proc.wait(timeout=120)
        assert reader.closed.wait(30)
        log = server.tail()
    finally:
        server.stop()
    kinds = [k for k, _ in reader.received]
    assert kinds[0] == "hello" and kinds[-1] == "end", (kinds[-5:], log)
    assert reader.received[-1][1] == {"status": "stopped", "error": None}, (reader.received[-1], log)
    for bad in ("ERROR", "Exception in ASGI application", "CancelledError", "timeout graceful shutdown"):
        assert bad not in log, log
    with sqlite3.connect(server.db) as db:
        status, result = db.execute("SELECT status, result_json FROM jobs WHERE id = ?", (stream["job_id"],)).fetchone()
    assert status == "stopped" and result, (status, log)
