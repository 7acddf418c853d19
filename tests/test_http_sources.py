"""HTTP file and HLS sources over a real HTTP server on loopback."""

from __future__ import annotations

import time

import av
import pytest

from pipelines.media.ingest import SegmentReader
from pipelines.media.sources import SourceKind, parse_source
from tests.helpers.ts_parts import ts_parts
from tests.helpers.web import QuietHandler, serve_files, served_url


def segments(spec) -> list:
    reader = SegmentReader(spec, "t").start()
    out = []
    while (seg := reader.get(timeout=60)) is not None:
        out.append(seg)
    return out


def test_http_file_is_read_whole(http_root, demo_clip):
    spec = parse_source(f"{http_root}/clip.mp4")
    assert spec.kind is SourceKind.HTTP and not spec.live
    segs = segments(spec)
    assert len(segs) == int(demo_clip[1].duration_s)
    assert all(s.audio is not None and len(s.frames) == 2 for s in segs)


def test_hls_playlist_is_live_by_default_and_decodes(http_root, demo_clip):
    spec = parse_source(f"{http_root}/index.m3u8", live=False)
    assert parse_source(f"{http_root}/index.m3u8").live
    segs = segments(spec)
    assert abs(len(segs) - demo_clip[1].duration_s) <= 1
    assert sum(len(s.frames) for s in segs) >= 2 * (len(segs) - 1)


def test_http_404_is_bad_input(http_root):
    from models.errors import BadInput
    from pipelines.spine.pipeline import probe

    with pytest.raises(BadInput, match="cannot open|not found|invalid"):
        probe(parse_source(f"{http_root}/missing.mp4"))


@pytest.fixture
def discontinuous_hls(tmp_path, demo_clip):
    """Two 8-s segments, each from an encoder whose clock starts at 0, with `#EXT-X-DISCONTINUITY` between them
    (an encoder restarted behind the feed, or an inserted clip), served on loopback: its URL."""
    ts_parts(demo_clip[0], tmp_path, (0, 10), 8)
    (tmp_path / "index.m3u8").write_text(
        "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:8\n#EXT-X-MEDIA-SEQUENCE:0\n#EXT-X-PLAYLIST-TYPE:VOD\n"
        "#EXTINF:8.0,\npart0.ts\n#EXT-X-DISCONTINUITY\n#EXTINF:8.0,\npart1.ts\n#EXT-X-ENDLIST\n")
    server = serve_files(tmp_path)
    yield f"http://127.0.0.1:{server.server_address[1]}/index.m3u8"
    server.shutdown()


def test_hls_goes_on_across_a_discontinuity(discontinuous_hls):
    """All 16 seconds arrive, where the second segment's 8 used to be skipped as already passed
    (`decode.ContinuousClock`)."""
    spec = parse_source(discontinuous_hls, live=False)
    reader = SegmentReader(spec, "t").start()
    segs = []
    while (seg := reader.get(timeout=60)) is not None:
        segs.append(seg)
    assert len(segs) >= 16 and all(len(s.frames) == 2 for s in segs[:16])
    assert reader.stats.clock_jumps == 2


def test_a_detect_sources_main_recording_goes_on_across_a_discontinuity(discontinuous_hls, tmp_path):
    """The main stream of `--detect-source` is remuxed, not decoded: its recording continues the clock too, so
    the second part is recorded after the first instead of over it (before: written into the first part's
    times, the recording spanned 8 s with its times going back)."""
    from pipelines.media.detect_source import MainRecording
    from pipelines.media.recorder import RecordConfig, list_segments

    recording = MainRecording(parse_source(discontinuous_hls), RecordConfig(str(tmp_path / "rec"))).start()
    deadline = time.time() + 60
    while recording.last_error != "source ended" and time.time() < deadline:
        time.sleep(0.2)
    recording.stop()
    assert recording.stats()["errors"] == 0, recording.stats()
    times = []  # every recorded video packet's decode time, segment after segment
    for path in list_segments(tmp_path / "rec"):
        with av.open(str(path)) as container:
            times += [float(p.dts * p.time_base) for p in container.demux(container.streams.video[0])
                      if p.dts is not None]
    assert times == sorted(times) and times[-1] - times[0] > 15.5, (times[0], times[-1])


class MjpegCamera(QuietHandler):
    """An IP camera's HTTP stream on loopback: multipart JPEG at 10 pictures a second, in real time, for 30 s;
    every picture of the k-th second it sends is grey at level 40 + 20 k."""

    def do_GET(self) -> None:
        import cv2
        import numpy as np

        self.send_response(200)
        self.send_header("Content-Type", "multipart/x-mixed-replace;boundary=frame")
        self.end_headers()
        started = time.monotonic()
        for n in range(300):
            level = 40 + 20 * min(int(time.monotonic() - started), 10)
            jpeg = cv2.imencode(".jpg", np.full((120, 160, 3), level, np.uint8))[1].tobytes()
            self.wfile.write(b"--frame\r\nContent-Type: image/jpeg\r\nContent-Length: " + str(len(jpeg)).encode()
                             + b"\r\n\r\n" + jpeg + b"\r\n")
            self.wfile.flush()
            time.sleep(max(0.0, started + (n + 1) / 10 - time.monotonic()))


@pytest.fixture
def mjpeg_camera():
    with served_url(MjpegCamera, "/video.mjpg") as url:
        yield url


def test_an_http_camera_is_live_and_timed_as_its_pictures_arrive(mjpeg_camera, http_root):
    """A multipart JPEG camera over HTTP is a live source, timed by the wall clock. Before, it was read as a
    download (no reconnects, no recording), and FFmpeg numbered its pictures at 25 a second: at 10 a second its
    analysis ran 2.5 times ahead of the camera."""
    from pipelines.media.sources import settle_live

    assert not settle_live(parse_source(f"{http_root}/clip.mp4"), None).live  # a download stays one
    spec = settle_live(parse_source(mjpeg_camera), None)
    assert spec.live and spec.kind is SourceKind.HTTP
    reader = SegmentReader(spec, "cam", duration_s=5.0).start()
    segs = []
    while (seg := reader.get(timeout=60)) is not None:
        segs.append(seg)
    levels = [[round((float(f.mean()) - 40) / 20, 1) for f in s.frames] for s in segs]
    assert [s.index for s in segs] == list(range(5)) and all(len(f) == 2 for f in levels), levels
    assert all(abs(level - s.index) <= 0.6 for s, row in zip(segs, levels, strict=True) for level in row), levels


def test_an_http_camera_takes_a_detect_source_through_the_api(tmp_path):
    """Through the API every HTTP read goes through the source policy's pinned reader, which failed FFmpeg's look
    at the end of a stream without a length: an HTTP camera added to the server never opened ("source refused
    or unreachable"), and once it did, its reads waited for 64 kB (seconds of a small camera's pictures). And
    `detect_source` was checked against the main source before the pipeline had opened it, so a plain HTTP
    camera (not yet known to be live) was refused: 422 "detect_source needs a live main source". Now the stream
    runs on the sub-stream, records the main one, and its seconds come."""
    from tests.helpers.api_server import ApiServer, wait_until_not
    from tests.helpers.cli import free_port

    with served_url(MjpegCamera, "/main.mjpg") as main, served_url(MjpegCamera, "/sub.mjpg") as sub:
        server = ApiServer(tmp_path / "f.db", free_port(), "--no-asr", "--source-network", "127.0.0.0/8")
        try:
            server.wait_ready()
            with server.client() as c:
                r = c.post("/v1/streams", json={"source": main, "detect_source": sub})
                assert r.status_code == 202, r.text
                info = wait_until_not(c, r.json()["id"], ("starting",))
                assert info["status"] == "running" and info["detect_source"] == sub and info["recorded"], (info, server.tail())
                deadline = time.monotonic() + 120  # a bound on the wait, not a timed assertion
                while (health := c.get(f"/v1/streams/{info['id']}").json()["health"]).get("segments_emitted", 0) < 3:
                    assert time.monotonic() < deadline, health
                    time.sleep(0.5)
                assert c.delete(f"/v1/streams/{info['id']}").status_code == 200
        finally:
            server.stop()


def test_a_finished_hls_playlist_is_read_as_a_recording(http_root, tmp_path):
    """A VOD playlist (`#EXT-X-ENDLIST`) was live like any HLS URL: read to its end, reopened and read again,
    forever (on the server, 501 s of "stream" after 20 s of wall time, 45 reconnects). It is read once, as a file,
    also behind a master playlist and under an API source policy; a playlist without the end stays live."""
    from pipelines import AnalyzeOptions, StageConfig, analyze_inline
    from pipelines.media.policy import SourcePolicy
    from pipelines.media.sources import settle_live

    root = tmp_path / "www"
    root.mkdir()
    vod = f"{http_root}/index.m3u8"
    (root / "master.m3u8").write_text(f"#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=800000\n{vod}\n")
    server = serve_files(root)
    master = f"http://127.0.0.1:{server.server_address[1]}/master.m3u8"
    try:
        guard = SourcePolicy(networks=("127.0.0.0/8",), allow_public=False)
        for url, live in ((vod, False), (master, False), (f"{http_root}/live.m3u8", True)):
            assert settle_live(parse_source(url), None).live is live, url
            assert settle_live(parse_source(url, guard=guard), None).live is live, url
        result = analyze_inline(vod, AnalyzeOptions(stages=StageConfig(asr=False, visual=False, safety=False)))
    finally:
        server.shutdown()
    assert len(result["seconds"]) == 20 and result["ingest"]["reconnects"] == 0, result["ingest"]
