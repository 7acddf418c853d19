"""Tracking knobs: Frigate's moved-before-reported rule, the confirming score, hits before an id and the line's
hysteresis on the real stage, bad knobs refused, knobs reaching the stage, and a line on an audio-only live
stream (split from test_tracking.py, which holds the scripted scenes)."""

from __future__ import annotations

import pytest

from models.errors import BadInput
from tests.test_tracking import _options


def _boxes_stage(moved: float, *argv: str):
    """The real tracking stage at 4 samples a second, reporting tracks once they moved `moved` of the picture
    (`argv`: more tracking flags)."""
    from dataclasses import replace

    from pipelines.stages.tracking import TrackStage

    return TrackStage(replace(_options("--track", *argv).stages, track_moved=moved))


def _run(stage, boxes_at, seconds: int = 6) -> tuple[list[dict], list[dict]]:
    """Feed the stage 4 frames a second of 640x480 detections `boxes_at(t)`: (its tracks, its crossings)."""
    from pipelines.stages.record import Second

    crossings = []
    for s in range(seconds):
        frames = [{"t": s + k / 4, "size": [640, 480], "detections": boxes_at(s + k / 4)} for k in range(4)]
        crossings += stage.process(Second(index=s, start=s, end=s + 1), {"frames": frames}).crossings
    return stage.finish(Second.closing()).tracks, crossings


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


def test_a_track_is_reported_once_a_detection_confirms_it():
    """`--track-confirm-score`: a dog whose boxes all score 0.35 (enough for ByteTrack to start and keep it)
    is no track at 0.5, while one that scores 0.6 once, at 2 s, is reported from its first sighting."""
    def dogs(t):
        x = 20 + 50 * t
        return [{"label": "dog", "score": 0.35, "box": [x, 40, x + 80, 120]},
                {"label": "dog", "score": 0.6 if t == 2 else 0.35, "box": [x, 300, x + 80, 380]}]

    (confirmed,) = _run(_boxes_stage(0.06, "--track-confirm-score", "0.5"), dogs)[0]
    assert confirmed["path"][0][2] == round(300 / 480, 4) and confirmed["start"] <= 0.25  # held, then reported
    assert len(_run(_boxes_stage(0.06), dogs)[0]) == 2  # the knob off (default 0): both are tracks


def test_a_two_frame_flash_gets_no_id_with_three_hits():
    """`--track-min-hits 3`: a box seen on two frames in a row is never reported (with `--track-min-seen 1` it
    is: ByteTrack gives a track its id on its second match; by default a track is reported once seen four times,
    so not either); a walker seen on every frame is, as one track."""
    def boxes(t):
        x = 20 + 60 * t
        flash = [{"label": "person", "score": 0.9, "box": [500, 50, 560, 200]}] if t in (1.5, 1.75) else []
        return [{"label": "person", "score": 0.9, "box": [x, 250, x + 60, 420]}, *flash]

    assert len(_run(_boxes_stage(0.0, "--track-min-seen", "1"), boxes)[0]) == 2
    for flags in (["--track-min-hits", "3", "--track-min-seen", "1"], []):
        (walker,) = _run(_boxes_stage(0.0, *flags), boxes)[0]
        assert walker["end"] == 5.75


def test_line_hysteresis_counts_a_jittering_box_once():
    """`--track-line-hits 3`: a person who steps over the line and back twice before walking over it for good
    counts one crossing, and so with 2 (the default since round 5); with 1 (round 4's) every step over the line
    counts."""
    xs = [260, 280, 300, 330, 310, 330, 310, 340, 360, 380, 400, 420] + [420] * 12  # the line is at x 320

    def person(t):
        x = xs[int(round(t * 4))]
        return [{"label": "person", "score": 0.9, "box": [x - 50, 200, x + 50, 400]}]

    every = _run(_boxes_stage(0.0, "--line", "door=0.5,0,0.5,1", "--track-line-hits", "1"), person)[1]
    assert [c["direction"] for c in every] == ["right_to_left", "left_to_right"] * 2 + ["right_to_left"]
    for hits in (["--track-line-hits", "3"], []):
        once = _run(_boxes_stage(0.0, "--line", "door=0.5,0,0.5,1", *hits), person)[1]
        assert [(c["direction"], c["time"]) for c in once] == [("right_to_left", 1.75)]  # the step over, at 1.75 s


@pytest.mark.parametrize("tracker", ["bytetrack", "ocsort", "cbiou", "botsort"])
def test_each_tracker_follows_two_walkers(tracker):
    """`--tracker`: each of `trackers`' trackers keeps two people walking apart as two tracks over 6 s, and
    counts the one that walks over the line."""
    def people(t):
        x = 40 + 60 * t
        return [{"label": "person", "score": 0.9, "box": [x, 250, x + 60, 420]},
                {"label": "person", "score": 0.8, "box": [560 - 20 * t, 40, 620 - 20 * t, 200]}]

    stage = _boxes_stage(0.0, "--tracker", tracker, "--line", "door=0.5,0,0.5,1")
    assert type(stage.tracker).__name__.lower().startswith(tracker)  # ByteTrackTracker, OCSORTTracker, ...
    tracks, crossings = _run(stage, people)
    assert len(tracks) == 2 and min(t["end"] - t["start"] for t in tracks) >= 4.5, tracks
    assert [c["direction"] for c in crossings] == ["right_to_left"]


@pytest.mark.parametrize("argv, reason", [
    (["--track-min-score", "1.5"], "--track-min-score"),
    (["--track-confirm-score", "2"], "--track-confirm-score"),
    (["--track-min-hits", "0"], "--track-min-hits"),
    (["--track-line-hits", "31"], "--track-line-hits"),
    (["--track-moved", "-0.1"], "--track-moved"),
    (["--track-nms", "1.5"], "--track-nms"),
    (["--track-min-seen", "0"], "--track-min-seen"),
    (["--track-classes", "car,unicorn"], "unicorn"),
])
def test_bad_tracker_knobs_are_refused(argv, reason):
    with pytest.raises(BadInput, match=reason):
        _options("--track", *argv)


def test_tracker_knobs_reach_the_stage():
    s = _options("--line", "a=0.5,0,0.5,1", "--track-min-score", "0.5", "--track-moved", "0.05",
                 "--track-classes", "person,car").stages
    assert (s.track_min_score, s.track_moved, s.track_classes) == (0.5, 0.05, ("person", "car"))
    s = _options("--track", "--track-min-hits", "2", "--track-confirm-score", "0.45", "--track-line-hits", "3").stages
    assert (s.track_min_hits, s.track_confirm_score, s.track_line_hits) == (2, 0.45, 3)
    assert _options("--track", "--tracker", "cbiou").stages.track_tracker == "cbiou"
    s = _options("--track", "--track-nms", "0.45", "--no-track-fill", "--track-min-seen", "2").stages
    assert (s.track_nms, s.track_fill, s.track_min_seen) == (0.45, False, 2)
    s = _options("--track").stages
    assert (s.track_nms, s.track_fill, s.track_min_seen, s.track_still_people) == (0.5, True, 4, False)
    assert _options("--track", "--track-still-people").stages.track_still_people
    with pytest.raises(SystemExit):  # argparse's choices: exit 2 with its one-line error
        _options("--track", "--tracker", "deepsort")


def test_round3_knobs_from_toml(tmp_path):
    from app.cli import build_parser
    from app.services.settings import analysis_options, parse_args

    config = tmp_path / "f.toml"
    config.write_text('[analysis]\nline = ["gate=0.5,0,0.5,1"]\ntrack-line-hits = 2\ntracker = "cbiou"\n'
                      'track-min-hits = 3\ntrack-confirm-score = 0.5\ntrack-nms = 0.7\nno-track-fill = true\n'
                      'track-still-people = true\n')
    parser = build_parser()
    s = analysis_options(parse_args(parser, ["analyze", "x.mp4", "--config", str(config)], parser.config_targets)).stages
    assert (s.track_line_hits, s.track_tracker, s.track_min_hits, s.track_confirm_score) == (2, "cbiou", 3, 0.5)
    assert (s.track_nms, s.track_fill, s.track_still_people) == (0.7, False, True)


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
