"""Round 7 of the tracker (docs/tracking.md): a track lost a moment ago continues in a new one that begins near it
(`pipelines/stages/relink.py`), and a step well over a counting line counts at once (`--track-line-margin`). On
the real tracking stage with scripted boxes, and on the linker alone."""

from __future__ import annotations

from pipelines.stages.relink import FRESH_IDS, Relinker
from tests.test_tracking_knobs import _boxes_stage, _run


def _box(cx: float, width: float = 200, top: float = 200, height: float = 120) -> dict:
    return {"label": "car", "score": 0.9, "box": [cx - width / 2, top, cx + width / 2, top + height]}


def _hidden_turn(t: float) -> list[dict]:
    """A car driving right at 40 px/s from x 150, hidden behind something from 2.75 s to 3.25 s, that comes out
    at x 445 creeping left (it turned while hidden): far from where ByteTrack expects it (290), within one box
    size (200 px) of where it was lost (250)."""
    if t <= 2.5:
        return [_box(150 + 40 * t)]
    if t < 3.5:
        return []
    return [_box(445 - 10 * (t - 3.5))]


def test_a_car_hidden_while_it_turns_keeps_its_id_and_its_crossing():
    line = ("--line", "door=0.5,0,0.5,1")
    (car,), crossings = _run(_boxes_stage(0.0, *line), _hidden_turn, seconds=7)
    assert car["start"] == 0.0 and car["end"] == 6.75
    # it was lost left of the line (x 250) and found right of it (x 445): one crossing, that car's
    assert [(c["track_id"], c["direction"], c["time"]) for c in crossings] == [(car["id"], "right_to_left", 3.5)]
    # with the linking off, ByteTrack's two tracks, and the crossing made while hidden is lost
    apart, crossings = _run(_boxes_stage(0.0, *line, "--track-relink-s", "0"), _hidden_turn, seconds=7)
    assert len(apart) == 2 and crossings == []
    # hidden longer than --track-relink-s: two tracks again
    assert len(_run(_boxes_stage(0.0, *line, "--track-relink-s", "0.5"), _hidden_turn, seconds=7)[0]) == 2


def test_an_object_that_appears_beside_a_tracked_one_is_another_track():
    """A second car that drives in next to one in plain view (within one box size) is not taken for it."""
    def two(t: float) -> list[dict]:
        return [_box(100 + 30 * t), *([_box(300 + 30 * t, top=330)] if t >= 2 else [])]

    tracks = _run(_boxes_stage(0.0), two, seconds=6)[0]
    assert sorted(t["start"] for t in tracks) == [0.0, 2.0] and len({t["id"] for t in tracks}) == 2


def test_the_linker_gives_each_id_once():
    linker = Relinker(within_s=1.0, reach=1.0)
    box = [0.1, 0.1, 0.3, 0.3]
    assert linker.id_of(1, 0.0, box, "dog") == 1
    linker.seen(1, 2.0, box, "dog")
    near = [0.2, 0.1, 0.4, 0.3]
    assert linker.id_of(7, 1.75, near, "dog") == 7  # seen after 7's first sighting: still there, not lost
    assert linker.id_of(8, 2.5, near, "person") == 8  # a person is not a dog
    assert linker.id_of(9, 3.5, near, "dog") == 9  # lost 1.5 s before: longer than within_s
    assert linker.id_of(10, 2.5, [0.6, 0.6, 0.8, 0.8], "dog") == 10  # too far (0.5 > one size, 0.2)
    assert linker.id_of(11, 2.5, near, "dog") == 1 and linker.id_of(11, 2.5, near, "dog") == 1  # continues 1
    assert linker.id_of(12, 2.5, near, "dog") == 12  # 1 is taken (and not seen since: nothing to link to)
    # the tracker finds its track 1 again after 11 took the id: reported apart
    assert linker.id_of(1, 0.0, box, "dog") == FRESH_IDS and linker.id_of(11, 2.5, near, "dog") == 1
    assert Relinker(within_s=0.0, reach=1.0).id_of(5, 0.0, box, "dog") == 5


def test_a_step_well_over_the_line_and_back_counts_twice():
    """A person who steps 80 px (an eighth of the picture) over the line for one sample and comes back has crossed
    twice: the step is beyond --track-line-margin (default 0.05), so it counts without the second sighting
    --track-line-hits 2 asks for; with the margin off the excursion is taken for jitter and nothing counts."""
    xs = [200, 230, 260, 290, 400, 290, 260, 230] + [200] * 16  # the line is at x 320

    def person(t: float) -> list[dict]:
        x = xs[int(round(t * 4))]
        return [{"label": "person", "score": 0.9, "box": [x - 150, 100, x + 150, 400]}]

    line = ("--line", "door=0.5,0,0.5,1")
    crossings = _run(_boxes_stage(0.0, *line), person)[1]
    assert [(c["direction"], c["time"]) for c in crossings] == [("right_to_left", 1.0), ("left_to_right", 1.25)]
    assert _run(_boxes_stage(0.0, *line, "--track-line-margin", "0"), person)[1] == []


def test_round7_knobs_reach_the_stage_from_the_cli_and_toml(tmp_path):
    import pytest

    from app.cli import build_parser
    from app.services.settings import analysis_options, parse_args
    from models.errors import BadInput
    from tests.test_tracking import _options

    s = _options("--track").stages
    assert (s.track_line_margin, s.track_relink_s, s.track_relink_reach) == (0.05, 1.0, 1.0)
    s = _options("--track", "--track-line-margin", "0.1", "--track-relink-s", "2", "--track-relink-reach", "0.5").stages
    assert (s.track_line_margin, s.track_relink_s, s.track_relink_reach) == (0.1, 2.0, 0.5)
    for argv, reason in ((["--track-line-margin", "1.5"], "--track-line-margin"),
                         (["--track-relink-s", "-1"], "--track-relink-s"),
                         (["--track-relink-reach", "11"], "--track-relink-reach")):
        with pytest.raises(BadInput, match=reason):
            _options("--track", *argv)
    config = tmp_path / "f.toml"
    config.write_text('[analysis]\nline = ["gate=0.5,0,0.5,1"]\ntrack-line-margin = 0\ntrack-relink-s = 0\n')
    parser = build_parser()
    s = analysis_options(parse_args(parser, ["analyze", "x.mp4", "--config", str(config)], parser.config_targets)).stages
    assert (s.track_line_margin, s.track_relink_s) == (0.0, 0.0)


def test_the_linker_forgets_tracks_lost_long_ago():
    """A camera runs for days: lost tracks are kept a minute past --track-relink-s, not forever."""
    linker = Relinker(within_s=1.0, reach=1.0)
    for i in range(2000):  # a new track every 2 s for 4000 s
        linker.id_of(i, 2.0 * i, [0.1, 0.1, 0.2, 0.2], "car")
        linker.seen(i, 2.0 * i + 1.5, [0.1, 0.1, 0.2, 0.2], "car")
    assert len(linker._last) <= 32
