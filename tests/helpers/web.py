"""Tiny loopback HTTP servers for tests: a quiet handler base with a one-call reply, and a threaded server."""

from __future__ import annotations

import http.server
import threading


class QuietHandler(http.server.BaseHTTPRequestHandler):
    """No request log; `reply` sends a status, headers and a body with its length."""

    def reply(self, status: int, body: bytes, **headers: str) -> None:
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


def serve(address: str, handler: type[http.server.BaseHTTPRequestHandler]) -> http.server.ThreadingHTTPServer:
    """A threaded server on `address` and a free port, serving until `.shutdown()`."""
    server = http.server.ThreadingHTTPServer((address, 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
