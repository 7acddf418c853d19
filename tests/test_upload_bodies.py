"""Upload bodies a real server on loopback must refuse with a 4xx and a reason: a body cut before its closing
boundary, a chunked body that goes on past the limit after it, a boundary over the parser's 256 bytes, the clip
in another part, a raw video body, and query fields that the JSON routes would refuse."""

from __future__ import annotations

import pytest

from tests.helpers.api_server import ApiServer
from tests.helpers.cli import free_port

KEY = "upload-key"
B = "XyZb0undary"
LIMIT = 1 << 20  # --max-upload-mb 1


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = ApiServer(tmp_path_factory.mktemp("uploads") / "u.db", free_port(), "--max-upload-mb", "1", api_key=KEY)
    try:
        srv.wait_ready()
        yield srv
    finally:
        srv.stop()


def _part(name: str, data: bytes, filename: str | None = None) -> bytes:
    disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
    ctype = "Content-Type: video/mp4\r\n" if filename else ""
    return f"--{B}\r\nContent-Disposition: {disposition}\r\n{ctype}\r\n".encode() + data + b"\r\n"


def _post(server: ApiServer, body, boundary: str = B):
    with server.client() as c:
        r = c.post("/v1/analyze", content=body, headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    assert 400 <= r.status_code < 500 and set(r.json()) == {"detail"} and "\n" not in r.json()["detail"], r.text
    return r.status_code, r.json()["detail"]


def test_a_body_cut_before_its_closing_boundary_is_refused(server, demo_clip):
    """A client that stops mid-upload with an honest length (or a proxy that cuts the body) sent the first part
    of the clip: it was accepted and analysed as a shorter clip, `done` with 3 of the demo's 10 events."""
    body = _part("file", demo_clip[0].read_bytes()[:600_000], "demo.mp4")
    assert _post(server, body) == (400, "the multipart body ended before its closing boundary (an upload cut short)")
    whole = _part("file", b"\x00" * 1000, "x.mp4") + f"--{B}--\r\n".encode()  # framing complete: on to the media check
    assert _post(server, whole)[0] == 422


def test_a_chunked_body_is_capped_as_a_whole(server):
    """Only the bytes inside parts were counted, so a chunked body could go on after its closing boundary (the
    epilogue) for as long as the client liked: 3 GB were read under a 5 MB limit, then a 202."""
    def body():
        yield _part("file", b"\x00" * 1000, "x.mp4") + f"--{B}--\r\n".encode()
        for _ in range(64):
            yield b"e" * 65536  # 4 MB of epilogue
    assert _post(server, body()) == (413, f"upload is larger than the limit of {LIMIT} bytes")


def test_malformed_framing_and_misplaced_clips_are_4xx(server):
    """A boundary over python-multipart's 256 bytes was a 500 with a traceback; a clip in a part not named `file`
    was read into memory as a text field (413 "form fields are larger..."); a raw video body over 1 MB was a 413
    for JSON ("request body is larger than 1048576 bytes") instead of the 415 that names the format wanted."""
    status, detail = _post(server, b"x", boundary="b" * 257)
    assert status == 400 and detail.startswith("malformed multipart body")
    clip = _part("clip", b"\x00" * 200_000, "x.mp4") + f"--{B}--\r\n".encode()
    assert _post(server, clip) == (422, "send the clip as the multipart part 'file' (a file came in another part)")
    with server.client() as c:
        r = c.post("/v1/analyze", content=b"\x00" * (2 * LIMIT), headers={"Content-Type": "video/mp4"})
    assert r.status_code == 415 and "multipart/form-data" in r.json()["detail"], r.text


@pytest.mark.parametrize("query,reason", [(b"phone\x00ring", "query: must not contain control characters"),
                                          (b"\x1b[31mred\x07", "query: must not contain control characters"),
                                          (b"\xff\xfe phone", "form fields must be UTF-8 text")])
def test_query_fields_are_checked_as_the_json_routes_check_text(server, demo_clip, query, reason):
    """A query field with control characters or bytes that are not UTF-8 was accepted and stored (JSON routes
    refuse the same text with 422)."""
    body = _part("query", query) + _part("file", demo_clip[0].read_bytes()[:200_000], "d.mp4") + f"--{B}--\r\n".encode()
    assert _post(server, body) == (422, reason)
