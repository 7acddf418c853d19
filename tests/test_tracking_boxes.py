"""Round 4 of the tracker (docs/tracking.md): one box per object before ByteTrack, whatever the detector's
labels (people apart), and a track's path filled between two of its sightings. On the real tracking stage."""

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
    assert [p[0] for p in filled["path"]] == [k / 4 for k in range(1, 24)]  # ByteTrack gives no id to the first box
    assert [p[0] for p in gap["path"]] == [k / 4 for k in range(1, 24) if not 2.0 <= k / 4 <= 2.5]
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
