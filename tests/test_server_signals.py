"""`foresight serve` ends cleanly on SIGTERM (what systemd, Docker and Kubernetes send): exit 0, no traceback."""

from __future__ import annotations

import signal
import socket

from tests.helpers.api_server import ApiServer


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_sigterm_shuts_down_cleanly(tmp_path):
    server = ApiServer(tmp_path / "f.db", _free_port())
    try:
        server.wait_ready()
        server.proc.send_signal(signal.SIGTERM)  # the server process only, as a service manager does
        code = server.proc.wait(timeout=60)
        log = server.tail()
    finally:
        server.stop()
    assert code == 0, log
    assert "Traceback" not in log and "ERROR" not in log, log
