"""HTTP file and HLS sources over a real HTTP server on loopback."""

from __future__ import annotations

import subprocess

import pytest

from pipelines.media.ingest import SegmentReader
from pipelines.media.sources import SourceKind, parse_source
from tests.helpers.web import serve_files


@pytest.fixture(scope="module")
def http_root(tmp_path_factory, demo_clip):
    root = tmp_path_factory.mktemp("www")
    (root / "clip.mp4").write_bytes(demo_clip[0].read_bytes())
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", str(demo_clip[0]), "-c", "copy", "-f", "hls",
                    "-hls_time", "2", "-hls_playlist_type", "vod", str(root / "index.m3u8")], check=True)
    server = serve_files(root)
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


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
