"""FFmpeg opens only what the source policy checked (issue 18): an API-added HTTP or HLS source is fetched
through `pipelines.media.guarded_io` (every URL checked, each connection pinned to the checked address), and
an RTSP URL is pinned to its checked address.

The "camera" is an HTTP server on 127.0.0.1 that turns hostile after the first look: it answers a redirect,
or adds a playlist segment, that points at an "internal service" on 127.0.0.2, which records every hit."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from models.errors import BadInput
from pipelines.media.policy import SourcePolicy
from pipelines.media.sources import open_container, parse_source
from tests.helpers.web import QuietHandler, serve

POLICY = SourcePolicy(networks=("127.0.0.1/32",), allow_public=False)


class NamedCamera(SourcePolicy):
    """The loopback policy, with `camera.test` resolving to 127.0.0.1 (nothing else can resolve that name)."""

    def resolve(self, host: str) -> list[str]:
        return ["127.0.0.1"] if host == "camera.test" else super().resolve(host)


@pytest.fixture(scope="module")
def web(tmp_path_factory, demo_clip):
    root = tmp_path_factory.mktemp("camera")
    (root / "clip.mp4").write_bytes(demo_clip[0].read_bytes())
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", str(demo_clip[0]), "-c", "copy",  # index at the end
                    str(root / "moov_last.mp4")], check=True)
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", str(demo_clip[0]), "-t", "4", "-c", "copy",
                    "-f", "hls", "-hls_time", "2", "-hls_playlist_type", "vod", str(root / "vod.m3u8")], check=True)
    internal_hits: list[str] = []

    class Internal(QuietHandler):
        def do_GET(self):  # noqa: N802
            internal_hits.append(self.path)
            self.reply(200, b"")

    internal = serve("127.0.0.2", Internal)
    evil = f"http://127.0.0.2:{internal.server_address[1]}"
    state = {"requests": {}, "hosts": set(), "ranges": 0, "posts": []}

    class Camera(QuietHandler):
        def do_GET(self):  # noqa: N802
            n = state["requests"][self.path] = state["requests"].get(self.path, 0) + 1
            state["hosts"].add(self.headers.get("Host"))
            if self.path == "/turns.mp4" and n > 1:  # fine for the first look, a redirect inward afterwards
                return self.reply(302, b"", Location=f"{evil}/admin")
            if self.path == "/live.m3u8":  # a live playlist whose reload names a segment inside
                extra = "" if n == 1 else f"#EXTINF:2.0,\n{evil}/seg.ts\n#EXT-X-ENDLIST\n"
                return self.reply(200, ("#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:0\n"
                                        "#EXTINF:2.0,\nvod0.ts\n#EXTINF:2.0,\nvod1.ts\n" + extra).encode(),
                                  **{"Content-Type": "application/vnd.apple.mpegurl"})
            path = root / ("clip.mp4" if self.path == "/turns.mp4" else self.path.lstrip("/"))
            if not path.is_file():
                return self.reply(404, b"")
            data = path.read_bytes()
            start = 0
            if self.headers.get("Range", "").startswith("bytes="):
                state["ranges"] += 1
                start = int(self.headers["Range"][6:].split("-")[0])
                return self.reply(206, data[start:], **{"Content-Range": f"bytes {start}-{len(data) - 1}/{len(data)}"})
            return self.reply(200, data)

        def do_POST(self):  # noqa: N802 (a webhook receiver)
            state["posts"].append((self.headers.get("Host"), self.rfile.read(int(self.headers["Content-Length"]))))
            self.reply(200, b"")

    camera = serve("127.0.0.1", Camera)
    yield camera.server_address[1], state, internal_hits
    camera.shutdown()
    internal.shutdown()


def read_all(spec) -> int:
    """Demux and decode every video frame of `spec`; the frame count."""
    container = open_container(spec, 10, 10)
    try:
        return sum(1 for _ in container.decode(video=0))
    finally:
        container.close()


def test_a_redirect_after_the_check_never_reaches_the_internal_host(web):
    port, state, internal_hits = web
    url = f"http://127.0.0.1:{port}/turns.mp4"
    assert POLICY.check_source(url) == url  # the first look is harmless
    with pytest.raises(BadInput, match="refused"):
        read_all(parse_source(url, guard=POLICY))
    assert internal_hits == []
    # Without the guard (a trusted CLI user's own URL) FFmpeg follows the redirect: the threat is real.
    with pytest.raises(BadInput):
        read_all(parse_source(url))
    assert internal_hits == ["/admin"]
    internal_hits.clear()


def test_a_reloaded_live_playlist_cannot_name_an_internal_segment(web):
    port, state, internal_hits = web
    container = open_container(parse_source(f"http://127.0.0.1:{port}/live.m3u8", guard=POLICY), 10, 10)
    frames = 0
    with pytest.raises(PermissionError, match="source refused"):  # the ingest reconnects, then gives up
        for _ in container.decode(video=0):
            frames += 1
    container.close()
    assert frames > 0 and state["requests"]["/live.m3u8"] >= 2  # both local segments, then the reload
    assert internal_hits == []


def test_the_connection_goes_to_the_checked_address_with_the_name_in_host(web, demo_clip):
    port, state, _ = web
    expected = read_all(parse_source(str(demo_clip[0])))
    ranges_before = state["ranges"]
    # `camera.test` resolves only inside the policy: the clip can only be read over the pinned address.
    url = f"http://camera.test:{port}/moov_last.mp4"
    assert read_all(parse_source(url, guard=NamedCamera(**POLICY.__dict__))) == expected
    assert f"camera.test:{port}" in state["hosts"]
    assert state["ranges"] > ranges_before  # the jump to the index at the end became a Range request
    with pytest.raises(BadInput):
        read_all(parse_source(url))  # FFmpeg's own lookup finds nothing


def test_rtsp_and_http_urls_are_pinned_with_their_credentials():
    policy = NamedCamera(**POLICY.__dict__)
    assert policy.pin("rtsp://admin:p%40ss@camera.test:8554/live?ch=1") == (
        "rtsp://admin:p%40ss@127.0.0.1:8554/live?ch=1", "camera.test:8554")
    assert policy.pin("http://camera.test/x.m3u8") == ("http://127.0.0.1/x.m3u8", "camera.test")
    v6 = SourcePolicy(networks=("::1/128",), allow_public=False)
    assert v6.pin("rtsp://[::1]:554/s")[0] == "rtsp://[::1]:554/s"


def test_guarded_rtsp_is_refused_when_the_name_leaves_the_allowed_networks():
    spec = parse_source("rtsp://localhost:9/x", guard=SourcePolicy())  # loopback: refused before connecting
    with pytest.raises(BadInput, match="source refused"):
        open_container(spec, 2, 2)


def test_stream_manager_hands_its_policy_to_the_pipeline(tmp_path):
    from app.services.streams import StreamManager
    from pipelines import AnalyzeOptions
    from pipelines.sinks.store import Store

    store = Store(tmp_path / "f.db")
    assert (Path(store.path).stat().st_mode & 0o777) == 0o600  # it may hold persistent streams' credentials
    manager = StreamManager(store, str(store.path), AnalyzeOptions(), 2, policy=POLICY)
    stream = manager.add("rtsp://127.0.0.1:9/none")  # refused port: fails in the background, before Ray
    stream.watcher.join(60)
    assert stream.options.source_policy == POLICY and stream.status == "failed"
    assert parse_source(stream.source, guard=stream.options.source_policy).guard == POLICY


def test_webhooks_post_to_the_checked_address(web):
    from pipelines.sinks.webhooks import WebhookConfig, WebhookSender

    port, state, _ = web
    config = WebhookConfig(url=f"http://camera.test:{port}/hook", policy=NamedCamera(**POLICY.__dict__), retries=0)
    sender = WebhookSender(config, "cam")
    sender._queue.put({"alerts": [1]})
    assert sender.close()["sent"] == 1
    assert state["posts"][-1][0] == f"camera.test:{port}" and b'"alerts"' in state["posts"][-1][1]
