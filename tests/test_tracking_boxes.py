"""Rounds 4 and 5 of the tracker (docs/tracking.md): one box per object before ByteTrack, whatever the detector's
labels (people apart), a track's path filled between two of its sightings, and its boxes from before it got
its id found again. On the real tracking stage."""

from __future__ import annotations

import pytest

from tests.test_tracking_knobs import _boxes_stage, _run


def _walker(t: float, *labels: tuple[str, float, float]) -> list[dict]:
    """Boxes on one animal walking right at 60 px/s: each (label, score, downward shift in px)."""
    x = 40 + 60 * t
    return [{"label": label, "score": score, "box": [x, 240 + dy, x + 120, 360 + dy]} for label, score, dy in labels]


def test_one_object_boxed_as_two_classes_is_one_track():
    """SSD suppresses overlaps per class, so one cow comes as a "cow" box and a "horse" box: the tracker would
    follow two objects (round 3's false positives on the tracking set were mostly these). Now one track, with
    the better box's label; `--track-nms 1` turns the rule off."""
    def cow(t):
        return _walker(t, ("cow", 0.7, 0), ("horse", 0.4, 6))

    (track,) = _run(_boxes_stage(0.0), cow)[0]
    assert track["label"] == "cow" and track["end"] - track["start"] >= 5.5
    assert sorted(t["label"] for t in _run(_boxes_stage(0.0, "--track-nms", "1"), cow)[0]) == ["cow", "horse"]


def test_a_rider_keeps_both_boxes():
    """A person on a horse overlaps it as much as a duplicate would, but is another object: both stay tracks."""
    tracks = _run(_boxes_stage(0.0), lambda t: _walker(t, ("horse", 0.8, 0), ("person", 0.6, -10)))[0]
    assert sorted(t["label"] for t in tracks) == ["horse", "person"]


def test_a_track_missed_for_a_while_is_filled_on_the_straight_line():
    """A car the detector misses for three samples (2.0-2.5 s) and finds again under the same id: its path gets
    those three samples on the straight line between the sightings around them, and says how many it got;
    `--no-track-fill` leaves the gap."""
    def car(t):
        return [] if 2.0 <= t <= 2.5 else [{"label": "car", "score": 0.9, "box": [40 + 40 * t, 300, 160 + 40 * t, 380]}]

    (filled,) = _run(_boxes_stage(0.0), car)[0]
    (gap,) = _run(_boxes_stage(0.0, "--no-track-fill"), car)[0]
    assert filled["filled"] == 3 and "filled" not in gap
    assert [p[0] for p in filled["path"]] == [k / 4 for k in range(24)]
    assert [p[0] for p in gap["path"]] == [k / 4 for k in range(24) if not 2.0 <= k / 4 <= 2.5]
    at = {p[0]: p[1:] for p in filled["path"]}
    for t in (2.0, 2.25, 2.5):  # where the car was: 40 px/s to the right
        assert at[t] == pytest.approx([(40 + 40 * t) / 640, 0.625, (160 + 40 * t) / 640, 380 / 480], abs=1e-4)


def test_only_gaps_within_the_lost_track_buffer_are_filled():
    from pipelines.stages.tracking import filled_path

    path = [[0.0, 0.1, 0.1, 0.2, 0.2], [1.0, 0.5, 0.1, 0.6, 0.2], [4.0, 0.9, 0.1, 1.0, 0.2]]
    out, added = filled_path(path, 0.25, 2.0)
    assert added == 3 and [p[0] for p in out] == [0.0, 0.25, 0.5, 0.75, 1.0, 4.0]  # 3 s is longer than the buffer
    assert out[2] == [0.5, 0.3, 0.1, 0.4, 0.2]
    assert filled_path(path[:1], 0.25, 2.0) == (path[:1], 0)


def _entering(t: float) -> list[dict]:
    """A car driving in from the left edge at 80 px/s: its box is the part that shows, and the detector scores
    it low (0.12) until 1.0 s, when most of it is in; a low box of another car stands still on the right."""
    x1 = 40 + 80 * t
    car = {"label": "car", "score": 0.12 if t < 1.0 else 0.8, "box": [max(0.0, x1 - 160), 300, x1, 380]}
    return [car, {"label": "car", "score": 0.12, "box": [500, 100, 600, 160]}]


def test_a_track_gets_its_boxes_from_before_its_id():
    """ByteTrack begins a track on its first box at the high threshold (1.0 s here) and gives it an id on the
    second (1.25 s). Walking back through the boxes it left without an id, the track gets 1.0 s and the low
    boxes of the car coming in (0.0-0.75 s), oldest first, with the track's label; the standing low box on the
    right, which never overlaps, is never taken, and no other track begins."""
    (track,) = _run(_boxes_stage(0.0), _entering)[0]
    times = [p[0] for p in track["path"]]
    assert times[:6] == [0.0, 0.25, 0.5, 0.75, 1.0, 1.25] and track["start"] == 0.0 and track["label"] == "car"
    at = {p[0]: p[1:] for p in track["path"]}
    assert at[0.0] == pytest.approx([0.0, 300 / 480, 40 / 640, 380 / 480], abs=1e-4)  # the sliver at the edge
    assert at[0.5] == pytest.approx([0.0, 300 / 480, 80 / 640, 380 / 480], abs=1e-4)
    assert all(p[1] < 0.7 for p in track["path"])  # never the standing box (x 0.78-0.94)


def test_the_walk_back_stays_within_the_lost_track_buffer():
    """The walk back goes at most as far before the track's first box as a lost track waits (`track_buffer_s`):
    with 0.5 s, two frames before 1.0 s, so the car starts at 0.5 s."""
    from dataclasses import replace

    from pipelines.stages.tracking import TrackStage

    stage = _boxes_stage(0.0)
    (track,) = _run(TrackStage(replace(stage.config, track_buffer_s=0.5)), _entering)[0]
    assert track["start"] == 0.5


def test_a_person_standing_still_waits_for_moving_but_one_lying_does_not():
    """Round 5 (chosen on val and train, whose background photos hold people that never move): a person box
    that stays put is held like any other class until it moves `--track-moved`, but a person lying (box wider
    than tall) is reported at once, for the safety monitor's stillness cue. `--track-still-people` reports the
    standing one too, as before round 5."""
    def people(t):
        walker = 20 + 80 * t
        return [{"label": "person", "score": 0.8, "box": [500, 60, 560, 300]},  # standing in the photo
                {"label": "person", "score": 0.8, "box": [100, 380, 300, 460]},  # lying: 200 x 80 px
                {"label": "person", "score": 0.8, "box": [walker, 200, walker + 50, 330]}]

    def lying(tracks):
        return [t for t in tracks if t["path"][0][2] > 0.75]

    from pipelines.stages.config import StageConfig

    tracks = _run(_boxes_stage(StageConfig.track_moved), people)[0]
    assert len(tracks) == 2 and len(lying(tracks)) == 1 and lying(tracks)[0]["start"] == 0.0
    assert len(_run(_boxes_stage(StageConfig.track_moved, "--track-still-people"), people)[0]) == 3


def test_a_camera_that_changes_its_resolution_keeps_its_tracks():
    """A camera switched to another profile mid-stream sends a picture twice the size: the detector's pixel boxes
    double. The tracker followed them in pixels, so the walker's box leapt and it became a second track; it now
    follows boxes in the first frame's pixels, and the walker stays one track on the same 0-1 path (before, only
    the linker of lost tracks, `--track-relink-s`, could give the new track the old one's id)."""
    from pipelines.stages.record import Second

    stage = _boxes_stage(0.0, "--track-relink-s", "0")  # not found again by the linker of lost tracks either
    for s in range(6):
        scale = 1 if s < 3 else 2
        frames = [{"t": s + k / 4, "size": [640 * scale, 480 * scale],
                   "detections": [{**d, "box": [v * scale for v in d["box"]]} for d in _walker(s + k / 4, ("person", 0.8, 0))]}
                  for k in range(4)]
        stage.process(Second(index=s, start=s, end=s + 1), {"frames": frames})
    (track,) = stage.finish(Second.closing()).tracks
    assert track["start"] == 0.0 and track["end"] == 5.75
    at = {p[0]: p[1:] for p in track["path"]}
    for t in (2.75, 3.0):  # either side of the change: where the walker was, in 0-1
        assert at[t] == pytest.approx([(40 + 60 * t) / 640, 0.5, (160 + 60 * t) / 640, 0.75], abs=1e-4)
