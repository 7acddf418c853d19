"""`--detect-source`: a camera's small sub-stream is analysed while its main stream is recorded (Frigate's detect
and record roles). Real parts: the demo clip and a 320x180 copy of it (ffmpeg), each served in real time by its own
rtsp-server-perl on loopback, the real ingest and recorder, the Ray pipeline with its real detector, the CLI in a
subprocess and the API server in its own process."""

from __future__ import annotations

import shutil
import subprocess
import time

import av
import pytest

from pipelines.media.clips import recorded_range
from pipelines.media.detect_source import make_reader, parse_detect_source
from pipelines.media.ingest_stats import ReconnectPolicy
from pipelines.media.recorder import RecordConfig, list_segments, segment_start
from pipelines.media.sources import parse_source
from tests.helpers.api_server import ApiServer
from tests.helpers.cli import free_port, run_cli
from training.media.loopback import RtspServer

SMALL = (320, 180)


@pytest.fixture(scope="module")
def small_clip(demo_clip, tmp_path_factory):
    """The demo clip (640x360) scaled to 320x180, sound kept: the same scene at a camera's sub-stream size."""
    path = tmp_path_factory.mktemp("small") / "small.mp4"
    subprocess.run(["ffmpeg", "-nostdin", "-y", "-loglevel", "error", "-i", str(demo_clip[0]), "-vf",
                    f"scale={SMALL[0]}:{SMALL[1]}", "-c:v", "libx264", "-g", "25", "-c:a", "copy", str(path)],
                   check=True)
    return path


@pytest.fixture
def cameras(demo_clip, small_clip):
    """The main stream and its sub-stream, each on its own loopback RTSP server."""
    if shutil.which("rtsp-server-perl") is None or shutil.which("ffmpeg") is None:
        pytest.fail("rtsp-server-perl and ffmpeg are required (scripts/bootstrap.sh installs them)")
    main, detect = RtspServer(demo_clip[0]), RtspServer(small_clip)
    main.start()
    detect.start()
    yield main, detect
    main.kill()
    detect.kill()


def video_size(path) -> tuple[int, int]:
    with av.open(str(path)) as container:
        ctx = container.streams.video[0].codec_context
        return ctx.width, ctx.height


def read_all(reader) -> list:
    segs = []
    while (seg := reader.get(timeout=60)) is not None:
        segs.append(seg)
    return segs


def test_the_analysis_reads_the_sub_stream_and_the_recording_keeps_the_main_stream(cameras, tmp_path):
    main, detect = cameras
    spec = parse_source(main.url, "udp")
    reader = make_reader(spec, "cam", parse_detect_source(detect.url, spec, "udp"), duration_s=8.0,
                         record=RecordConfig(str(tmp_path / "rec"), segment_s=2.0)).start()
    segs = read_all(reader)
    assert len(segs) >= 7 and {f.shape for s in segs for f in s.frames} == {(SMALL[1], SMALL[0], 3)}
    assert all(s.audio.size == 16000 for s in segs[1:6])  # the sub-stream's sound is analysed
    stats = reader.stats.to_dict()
    assert stats["recording"]["source"] == spec.name and stats["recording"]["errors"] == 0, stats
    segments = list_segments(tmp_path / "rec")
    assert len(segments) >= 3 and {video_size(p) for p in segments} == {(640, 360)}
    with av.open(str(segments[1])) as container:
        assert [s.type for s in container.streams] == ["video", "audio"]
    first, last = recorded_range(tmp_path / "rec")
    assert first < 1.5 and last > 6.0  # on the analysis' timeline (both start at their first packet)


def test_a_sub_stream_outage_reconnects_the_analysis_and_the_recording_goes_on(cameras, tmp_path):
    main, detect = cameras
    spec = parse_source(main.url, "udp")
    reader = make_reader(spec, "cam", parse_detect_source(detect.url, spec, "udp"), duration_s=24.0, watchdog_s=2.0,
                         policy=ReconnectPolicy(initial_s=0.2, max_s=1.0, jitter=0.0),
                         record=RecordConfig(str(tmp_path / "rec"), segment_s=2.0)).start()
    first = reader.get(timeout=60)
    assert first is not None
    time.sleep(3.0)
    detect.kill()  # the sub-stream goes away for about 6 s, then comes back on the same ports
    time.sleep(6.0)
    detect.start()
    segs = [first, *read_all(reader)]
    stats = reader.stats.to_dict()
    assert stats["reconnects"] >= 1 and stats["lost_seconds"] > 3.0, stats
    assert stats["health"] == "ended" and stats["failure"] is None
    assert max(s.end for s in segs) >= 24.0
    rec = stats["recording"]
    assert rec["reconnects"] == 0 and rec["errors"] == 0, rec  # the main stream never dropped
    starts = [segment_start(p) for p in list_segments(tmp_path / "rec")]
    gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    lost_from, lost_to = stats["lost_intervals"][0]
    assert starts[0] < lost_from and starts[-1] > lost_to and max(gaps) < 4.5, (starts, stats["lost_intervals"])


def test_boxes_found_on_the_sub_stream_land_on_the_same_place_of_the_main_picture():
    """The dashboard draws a box in its `frame_size` pixels scaled onto the picture it is drawn on: a box of the
    320x180 analysis lands on twice its coordinates in a 640x360 main-stream frame."""
    import numpy as np

    from ui.picture import draw_boxes

    visual = {"frame_size": list(SMALL), "detections": [{"label": "person", "score": 0.9, "box": [40, 30, 100, 90]}]}
    drawn = np.asarray(draw_boxes(np.zeros((360, 640, 3), np.uint8), visual)).max(axis=2) > 0
    assert drawn[120, 79:82].any() and drawn[120, 199:202].any()  # the left and right edges, at x 80 and 200
    assert not drawn[120, 83:197].any() and not drawn[120, 30:50].any()  # nothing at the unscaled edge (x 40)


def test_bad_detect_sources_are_one_line_errors_with_exit_2(cameras, demo_clip, tmp_path):
    main, _ = cameras
    refused = f"rtsp://127.0.0.1:{free_port()}/sub"
    cases = {
        "a file source": ((str(demo_clip[0]), "--detect-source", main.url), "needs a live main source"),
        "the main source": ((main.url, "--detect-source", main.url), "is the main source itself"),
        "a file detect source": ((main.url, "--detect-source", str(demo_clip[0])), "not a file"),
        "a folder": ((main.url, "--detect-source", str(tmp_path)), "is a directory"),
        "unreachable": ((main.url, "--detect-source", refused), "connection refused"),
        "recording a file": ((str(demo_clip[0]), "--record", str(tmp_path / "r")), "--record needs a live source"),
    }
    for name, (args, reason) in cases.items():
        proc = run_cli("analyze", *args, "--no-asr", "-q", timeout=120)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1 and reason in lines[0], (name, proc.stderr)
        assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_the_cli_analyses_the_sub_stream_and_records_the_main_one(cameras, tmp_path):
    main, detect = cameras
    config = tmp_path / "f.toml"
    config.write_text(f'[analyze]\ndetect-source = "{detect.url}"\n')  # the TOML key of the flag
    proc = run_cli("analyze", main.url, "--config", str(config), "--rtsp-transport", "udp", "--duration", "6",
                   "--no-asr", "--no-tags", "--no-safety", "--no-ocr", "--record", str(tmp_path / "rec"), "--json",
                   "-q", timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    segments = list_segments(tmp_path / "rec")
    assert segments and {video_size(p) for p in segments} == {(640, 360)}
    assert '"source": "' + main.url in proc.stdout  # the result is the main source's


@pytest.mark.slow
def test_a_stream_with_a_detect_source_draws_boxes_in_its_frame_and_keeps_it_across_a_restart(
        cameras, tmp_path, ray_runtime):
    """The dashboard's and the API's stream manager: the analysed picture is the sub-stream's (its boxes' frame_size),
    the recording the main stream's; a persistent stream comes back with its detect source."""
    from app.services.recordings import Retention
    from app.services.streams import StreamManager
    from pipelines import AnalyzeOptions, StageConfig
    from pipelines.sinks.store import Store

    main, detect = cameras
    store = Store(tmp_path / "f.db")
    options = AnalyzeOptions(stages=StageConfig(asr=False, tags=False, ocr=False, safety=False))

    def manager() -> StreamManager:
        return StreamManager(store, str(store.path), options, 2, recordings=tmp_path / "recordings",
                             retention=Retention(segment_s=2.0))

    first = manager()
    stream = first.add(main.url, "udp", persistent=True, detect_source=detect.url)
    picture, deadline = None, time.time() + 300
    while picture is None and time.time() < deadline:
        assert stream.status in ("starting", "running"), stream.error
        picture = first.picture(stream) if stream.status == "running" else None
        time.sleep(1.0)
    assert picture is not None and picture["visual"]["frame_size"] == list(SMALL), picture
    deadline = time.time() + 60
    while len(list_segments(stream.recording)) < 3 and time.time() < deadline:
        time.sleep(0.5)
    finished = list_segments(stream.recording)[:-1]  # the newest is still being written
    assert len(finished) >= 2 and {video_size(p) for p in finished} == {(640, 360)}
    assert first.health(stream)["stats"]["recording"]["source"] == stream.source
    first.close()  # as a server stops: the persistent stream stays remembered

    again = manager()
    (back,) = again.resume()
    try:
        assert back.id == stream.id and back.detect_source == detect.url
        assert back.options.detect_source == detect.url
    finally:
        again.close()


def test_the_api_takes_detect_source_and_refuses_bad_ones(tmp_path):
    server = ApiServer(tmp_path / "f.db", free_port(), "--no-asr", "--source-network", "127.0.0.0/8")
    try:
        server.wait_ready()
        with server.client() as c:
            cam = f"rtsp://127.0.0.1:{free_port()}/main"
            sub = f"rtsp://user:secret@127.0.0.1:{free_port()}/sub"
            r = c.post("/v1/streams", json={"source": cam, "detect_source": sub})
            assert r.status_code == 202, r.text
            assert r.json()["detect_source"].startswith("rtsp://") and "secret" not in r.text
            assert c.delete(f"/v1/streams/{r.json()['id']}").status_code == 200
            for again in (cam, cam.replace("rtsp://", "RTSP://")):  # as written, or its scheme's case changed
                same = c.post("/v1/streams", json={"source": cam, "detect_source": again})
                assert same.status_code == 422 and "main source itself" in same.json()["detail"], (again, same.text)
            for bad in ("rtsp://192.0.2.1/sub", "/etc/passwd", "file:///etc/passwd"):  # outside the policy
                r = c.post("/v1/streams", json={"source": cam, "detect_source": bad})
                assert r.status_code == 400, (bad, r.text)
            assert c.get("/v1/streams").json() == []
    finally:
        server.stop()


def test_the_same_camera_written_another_way_is_the_same_source():
    from pipelines.media.detect_source import same_source

    assert same_source("rtsp://Cam.local/live", "RTSP://cam.local:554/live")
    assert same_source("http://u:p@cam/x?a=1", "HTTP://u:p@CAM:80/x?a=1")
    assert not same_source("rtsp://cam/live", "rtsp://cam/sub") and not same_source("rtsp://u:p@cam/a", "rtsp://cam/a")
    assert not same_source("rtsp://cam:8554/live", "rtsp://cam/live")
