"""Tiny loopback HTTP servers for tests: a quiet handler base with a one-call reply, a quiet file server, and a
threaded server that says nothing when a client hangs up mid-reply (a reader that had enough)."""

from __future__ import annotations

import functools
import http.server
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


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


class QuietFiles(http.server.SimpleHTTPRequestHandler):
    """The files under a folder (`directory=`), without a request log."""

    def log_message(self, *args) -> None:
        pass


class QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address) -> None:
        """A client that hung up mid-reply is no error of the test's (the stream readers stop once they have a
        file's head); anything else is printed as usual."""
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


def serve(address: str, handler: type[http.server.BaseHTTPRequestHandler] | functools.partial,
          port: int = 0) -> QuietServer:
    """A threaded server on `address` and `port` (0: a free one), serving until `.shutdown()`."""
    server = QuietServer((address, port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def serve_files(root: Path | str, port: int = 0) -> QuietServer:
    """The files under `root` over HTTP on 127.0.0.1."""
    return serve("127.0.0.1", functools.partial(QuietFiles, directory=str(root)), port)


@contextmanager
def served_url(handler: type[http.server.BaseHTTPRequestHandler], path: str) -> Iterator[str]:
    """`handler` on a loopback server for the block: the URL of `path` on it."""
    server = serve("127.0.0.1", handler)
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{path}"
    finally:
        server.shutdown()
