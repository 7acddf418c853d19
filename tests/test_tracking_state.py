"""A camera runs for days: the tracking stage keeps per-track state for its recent tracks only
(`TrackStage._forget`), and a track lost inside a zone leaves the zone when it is forgotten. On the real stage."""

from __future__ import annotations

from pipelines.stages.record import Second
from pipelines.stages.tracking import FORGET_S
from tests.test_tracking_knobs import _boxes_stage


def _street(t: float) -> list[dict]:
    """A car across the picture every 6 s (4 s in view), and a zebra on the rice fields that the detector sees
    2 s of every 5, never moving (a new id each time, never reported)."""
    out, x = [], (t % 6) * 200
    if x < 800:
        out.append({"label": "car", "score": 0.9, "box": [x - 100, 200, x + 100, 300]})
    if t % 5 < 2:
        out.append({"label": "zebra", "score": 0.6, "box": [400, 20, 600, 150]})
    return out


def _feed(stage, boxes_at, seconds: range) -> list[Second]:
    records = []
    for s in seconds:
        frames = [{"t": s + k / 4, "size": [640, 480], "detections": boxes_at(s + k / 4)} for k in range(4)]
        records.append(stage.process(Second(index=s, start=s, end=s + 1), {"frames": frames}))
    return records


def test_per_track_state_stays_bounded_over_a_long_run():
    stage = _boxes_stage(0.1, "--line", "door=0.5,0,0.5,1", "--zone", "left=0,0 0.5,0 0.5,1 0,1")
    sizes = []
    for start in range(0, 600, 120):
        _feed(stage, _street, range(start, start + 120))
        sizes.append((len(stage._held), len(stage._seen_at), len(stage._anchor), len(stage._counter._settled),
                      len(stage._relink._last)))
    # 100 cars and 120 zebra ids over 10 minutes; what is kept covers the last minute or so, not all of them
    assert len(stage.tracks) == 100
    assert sizes[-1] == sizes[-2] and max(max(s) for s in sizes) <= 2 * (FORGET_S / 5 + 1), sizes
    assert len(stage.finish(Second.closing()).tracks) == 100  # the result still lists every track


def test_a_track_lost_inside_a_zone_leaves_it_when_forgotten():
    """A car drives into the left half and is lost there (it went behind a building): a minute later its
    zone_exit comes, at its last sighting, marked lost; a car that drives out of the zone is not marked."""
    def car(t: float) -> list[dict]:
        if t >= 3:
            return []
        x = 500 - 100 * t  # from x 500 to 200: into the left half (the zone) at 1.8 s, lost at 2.75 s
        return [{"label": "car", "score": 0.9, "box": [x - 60, 300, x + 60, 380]}]

    stage = _boxes_stage(0.0, "--zone", "left=0,0 0.5,0 0.5,1 0,1")
    events = [z for r in _feed(stage, car, range(0, 70)) for z in r.zone_events]
    assert [(z["kind"], z.get("lost", False)) for z in events] == [("zone_enter", False), ("zone_exit", True)]
    exit_ = events[-1]
    assert exit_["time"] == 2.75 and exit_["dwell_s"] == round(2.75 - events[0]["time"], 3)
