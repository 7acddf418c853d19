"""Issue 33, item 2: the key, the content type and the size are checked before a byte of a body is read.

Against a real server on loopback, a client declares a huge body and sends only its first 64 kB. Before the
guard, the server read (and buffered) the whole body before answering 401 / 4xx, so such a client got no answer
at all until it had sent everything: 512 MB with no key took 27 s and grew the server by 0.8 GB."""

from __future__ import annotations

import socket

import psutil
import pytest

from tests.helpers.api_server import ApiServer
from tests.helpers.cli import free_port

KEY = "body-key"
DECLARED = 512 * 1024 * 1024
FIRST = b"x" * 65536


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = ApiServer(tmp_path_factory.mktemp("limits") / "l.db", free_port(), api_key=KEY)
    try:
        srv.wait_ready()
        yield srv
    finally:
        srv.stop()


def answer_to_a_huge_body(server: ApiServer, path: str, ctype: str, key: str | None,
                           declared: int = DECLARED) -> bytes:
    """Send headers for a 512 MB (`declared`) body and its first 64 kB, then wait (20 s at most) for the answer."""
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {ctype}\r\n"
            f"Content-Length: {declared}\r\n" + (f"X-API-Key: {key}\r\n" if key else "") + "\r\n").encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=20) as sock:
        sock.sendall(head + FIRST)
        reply = b""
        try:
            while chunk := sock.recv(4096):  # the guard closes the connection after its answer
                reply += chunk
        except TimeoutError:
            pass  # no answer (or no close) while the server waits for the rest of the body
        except ConnectionResetError:
            pass  # closed with our unread bytes still in its buffer: what it sent first is kept
        return reply


@pytest.mark.parametrize("path", ["/v1/streams", "/v1/search", "/v1/analyze"])
def test_no_key_is_401_before_the_body_is_read(server, path):
    rss = psutil.Process(server.proc.pid).memory_info().rss
    reply = answer_to_a_huge_body(server, path, "multipart/form-data; boundary=x", None)
    assert reply.startswith(b"HTTP/1.1 401"), reply[:200]
    assert b"API key" in reply
    assert psutil.Process(server.proc.pid).memory_info().rss - rss < 64 * 1024 * 1024


@pytest.mark.parametrize("path", ["/v1/streams", "/v1/search"])
def test_multipart_on_a_json_route_is_415_before_the_body_is_read(server, path):
    reply = answer_to_a_huge_body(server, path, "multipart/form-data; boundary=x", KEY)
    assert reply.startswith(b"HTTP/1.1 415"), reply[:200]
    assert b'{"detail":' in reply


def test_a_declared_size_over_the_limit_is_413_before_the_body_is_read(server):
    reply = answer_to_a_huge_body(server, "/v1/search", "application/json", KEY)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
    reply = answer_to_a_huge_body(server, "/v1/analyze", "multipart/form-data; boundary=x", KEY, 4 * DECLARED)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
