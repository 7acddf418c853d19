"""Tracking knobs: Frigate's moved-before-reported rule on the real stage, bad knobs refused, knobs reaching the
stage, and a line on an audio-only live stream (split from test_tracking.py, which holds the scripted scenes)."""

from __future__ import annotations

import pytest

from models.errors import BadInput
from tests.test_tracking import _options


def _boxes_stage(moved: float):
    """The real tracking stage at 4 samples a second, reporting tracks once they moved `moved` of the picture."""
    from dataclasses import replace

    from pipelines.stages.tracking import TrackStage

    return TrackStage(replace(_options("--track").stages, track_moved=moved))


def test_a_static_false_positive_is_not_reported_but_a_parked_car_is():
    """Frigate's rule (`--track-moved`): a box that never moves (a detector firing on a textured background)
    is no track; a car that drives in and parks is one, from its first sighting, and stays one while parked."""
    from pipelines.stages.record import Second

    def seconds(stage):
        for s in range(8):
            frames = []
            for k in range(4):
                t = s + k / 4
                x = min(40 + 60 * t, 300)  # drives right for ~4.3 s, then parks
                jitter = 2 * ((s * 4 + k) % 2)
                frames.append({"t": t, "size": [640, 480], "detections": [
                    {"label": "car", "score": 0.8, "box": [x, 300, x + 120, 380]},
                    {"label": "zebra", "score": 0.7, "box": [400 + jitter, 20, 600 + jitter, 150]}]})
            stage.process(Second(index=s, start=s, end=s + 1), {"frames": frames})
        return stage.finish(Second.closing()).tracks

    gated, every = seconds(_boxes_stage(0.03)), seconds(_boxes_stage(0.0))
    assert sorted(t["label"] for t in every) == ["car", "zebra"]  # the rule off: both are tracks
    (car,) = gated
    assert car["label"] == "car" and car["start"] <= 0.25 and car["end"] >= 7.5
    assert car["path"][-1][1:] == car["path"][-2][1:]  # parked at the end, still reported


@pytest.mark.parametrize("argv, reason", [
    (["--track-min-score", "1.5"], "--track-min-score"),
    (["--track-moved", "-0.1"], "--track-moved"),
    (["--track-classes", "car,unicorn"], "unicorn"),
])
def test_bad_tracker_knobs_are_refused(argv, reason):
    with pytest.raises(BadInput, match=reason):
        _options("--track", *argv)


def test_tracker_knobs_reach_the_stage():
    s = _options("--line", "a=0.5,0,0.5,1", "--track-min-score", "0.5", "--track-moved", "0.05",
                 "--track-classes", "person,car").stages
    assert (s.track_min_score, s.track_moved, s.track_classes) == (0.5, 0.05, ("person", "car"))


@pytest.mark.slow
def test_a_line_on_an_audio_only_live_stream_exits_2(tmp_path, demo_clip):
    """A live source is known only once it connects: an audio-only RTSP stream with a line exits 2 then."""
    import subprocess

    from tests.helpers.cli import run_cli
    from training.media.loopback import RtspServer

    audio = tmp_path / "audio.mp4"
    subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-i", str(demo_clip[0]), "-vn", "-c:a", "copy",
                    str(audio)], check=True)
    radio = RtspServer(audio)
    radio.start()
    try:
        done = run_cli("analyze", radio.url, "--rtsp-transport", "udp", "--line", "door=0.5,0,0.5,1",
                       "--duration", "20", "--no-asr", timeout=400)
    finally:
        radio.kill()
    assert done.returncode == 2, done.stderr[-2000:]
    assert "has no picture, and tracking, zones and lines need one" in done.stderr
