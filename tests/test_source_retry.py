"""Live sources before their first data: fail at once, or with `--retry` keep trying per the reconnect policy
(a camera expected to come up late). Runs the reader alone, without Ray."""

from __future__ import annotations

import subprocess
import time

import pytest

from models.errors import BadInput, StreamFailed
from pipelines.media.ingest import SegmentReader
from pipelines.media.ingest_stats import ReconnectPolicy
from pipelines.media.preflight import check_source
from pipelines.media.sources import parse_source
from tests.helpers.cli import free_port, run_cli
from tests.helpers.web import serve_files


@pytest.fixture(scope="module")
def hls_root(tmp_path_factory, demo_clip):
    root = tmp_path_factory.mktemp("hls")
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", str(demo_clip[0]), "-c", "copy", "-f", "hls",
                    "-hls_time", "2", "-hls_playlist_type", "vod", str(root / "index.m3u8")], check=True)
    return root


def drain(reader: SegmentReader, timeout: float = 60) -> list:
    out = []
    while (seg := reader.get(timeout=timeout)) is not None:
        out.append(seg)
    return out


def test_live_source_not_up_fails_at_once_without_retry():
    spec = parse_source(f"http://127.0.0.1:{free_port()}/index.m3u8")
    assert spec.live
    with pytest.raises(BadInput, match="connection refused"):
        check_source(spec)
    start = time.monotonic()
    reader = SegmentReader(spec, "cam", policy=ReconnectPolicy(initial_s=0.2)).start()
    with pytest.raises(StreamFailed, match="could not connect"):
        drain(reader)
    assert time.monotonic() - start < 5  # one attempt, no backoff
    check_source(spec, network=False)  # --retry: the reachability check is left to the reconnect policy


def test_retry_gives_up_after_the_budget_with_one_line_reason():
    spec = parse_source(f"http://127.0.0.1:{free_port()}/index.m3u8")
    policy = ReconnectPolicy(initial_s=0.1, max_s=0.3, outage_budget_s=1.5, retry_before_data=True)
    start = time.monotonic()
    with pytest.raises(StreamFailed, match="did not come up within 1.5 s") as info:
        drain(SegmentReader(spec, "cam", policy=policy).start())
    assert 1.5 <= time.monotonic() - start < 10
    assert "\n" not in str(info.value)


def test_retry_waits_for_a_camera_that_comes_up_late(hls_root):
    port = free_port()
    spec = parse_source(f"http://127.0.0.1:{port}/index.m3u8")
    policy = ReconnectPolicy(initial_s=0.2, max_s=0.5, outage_budget_s=30, retry_before_data=True)
    reader = SegmentReader(spec, "cam", policy=policy, duration_s=4.0).start()
    time.sleep(1.5)  # the reader is knocking on a closed port meanwhile
    server = serve_files(hls_root, port)
    try:
        segments = drain(reader)
    finally:
        server.shutdown()
    assert len(segments) >= 4 and segments[0].start == 0.0
    assert reader.stats.reconnects == 0 and reader.stats.lost_intervals == []  # not an outage: it had never sent


def test_cli_retry_flag_is_documented():
    proc = run_cli("analyze", "--help")
    assert "--retry" in proc.stdout and proc.returncode == 0
