"""MoveNet multipose (issue 28 §3's pose candidate, from the same npm package as NanoDet): our TFJS -> ONNX
converter on the whole graph, its in-graph decoding of people included (dynamic shapes, top-k, GatherNd, ...),
against the independent numpy reading of the TFJS files on real photos; the poses it gives on them."""

from __future__ import annotations

import numpy as np
import pytest
from skimage import data

from models.encoders.movenet import MovenetPoses, movenet_input, movenet_onnx
from models.encoders.people import inside, pose_box
from models.encoders.weights import model_files
from tests.helpers import tfjs_numpy


@pytest.fixture(scope="module")
def movenet() -> MovenetPoses:
    return MovenetPoses()


@pytest.mark.parametrize("photo", ["astronaut", "coffee"])
def test_onnx_graph_equals_a_numpy_reading_of_the_tfjs_weights(movenet, photo):
    x, _ = movenet_input(np.ascontiguousarray(getattr(data, photo)()))
    want = tfjs_numpy.run(model_files("movenet-multipose")[0], x, only=["Identity"])["Identity"]
    got = movenet.session.run(None, {movenet.input: x})[0]
    assert got.shape == want.shape == (1, 6, 56) and np.ptp(want) > 0.1
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)


def test_movenet_finds_the_astronaut_and_no_one_in_the_cup_or_the_cat(movenet):
    astronaut = movenet.poses(np.ascontiguousarray(data.astronaut()))  # 512 x 512, the person fills the left
    assert len(astronaut) == 1 and astronaut[0]["score"] > 0.3 and len(astronaut[0]["landmarks"]) == 17
    x0, y0, x1, y1 = astronaut[0]["box"]
    assert x0 < 60 and y0 < 60 and 300 < x1 < 450 and y1 > 450, astronaut[0]
    nose = astronaut[0]["landmarks"][0]
    assert 0.3 < nose[0] < 0.5 and 0.1 < nose[1] < 0.35 and nose[3] > 0.5, nose  # her face, upper middle-left
    assert inside(pose_box(astronaut[0]["landmarks"], 512, 512), astronaut[0]["box"]) > 0.9  # joints in the box
    assert movenet.poses(np.ascontiguousarray(data.coffee())) == []
    assert movenet.poses(np.ascontiguousarray(data.chelsea())) == []  # MediaPipe's landmarker fires on cats


def test_movenet_is_converted_once(movenet):
    path = movenet_onnx()
    stamp = path.stat().st_mtime_ns
    assert movenet_onnx() == path and path.stat().st_mtime_ns == stamp


def test_pose_tracker_on_movenet_gives_people_with_postures_and_the_pose_flag_reaches_the_stage(tmp_path):
    from app.cli import build_parser
    from app.services.settings import analysis_options, parse_args
    from models.encoders.visual import PoseTracker
    from models.errors import BadInput

    tracker = PoseTracker(num_poses=2, model="movenet-multipose")
    people = tracker.track([np.ascontiguousarray(data.astronaut())], [0.0])
    assert len(people) == 1 and len(people[0]["landmarks"]) == 17 and tracker.landmarker is None
    assert people[0]["posture"] in ("standing", "sitting", "lying", "unknown") and people[0]["visibility"] > 0.2
    config = tmp_path / "f.toml"
    config.write_text('[analysis]\npose = "mediapipe"\n')
    parser = build_parser()
    args = parse_args(parser, ["analyze", "clip.mp4", "--config", str(config)], parser.config_targets, env={})
    assert analysis_options(args).stages.pose == "mediapipe"
    parser = build_parser()  # the TOML's values became that parser's defaults
    plain = parse_args(parser, ["analyze", "clip.mp4"], parser.config_targets, env={})
    assert analysis_options(plain).stages.pose == "movenet-multipose"  # the default
    with pytest.raises(BadInput, match="--pose: unknown pose model 'openpose'.*movenet-multipose"):
        analysis_options(parse_args(parser, ["analyze", "clip.mp4", "--pose", "openpose"], parser.config_targets, env={}))


def test_streams_share_one_movenet_session_and_keep_their_own_people():
    """Each stream's tracker holds its identities; the graph (about 50 MB of ONNX Runtime session) is loaded once
    per process. Two streams run side by side on two threads give what each gives alone."""
    from concurrent.futures import ThreadPoolExecutor

    from models.encoders.visual import PoseTracker

    astronaut = np.ascontiguousarray(data.astronaut())
    empty = np.zeros_like(astronaut)
    one, two, alone = (PoseTracker(model="movenet-multipose") for _ in range(3))
    assert one.movenet is two.movenet is alone.movenet

    def run(tracker, frames):
        return [tracker.track([f], [t]) for t, f in enumerate(frames)]

    seen_alone = run(alone, [astronaut, astronaut, empty, astronaut] * 3)
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(run, one, [astronaut, astronaut, empty, astronaut] * 3)
        second = pool.submit(run, two, [empty] * 12)
        assert first.result() == seen_alone and second.result() == [[]] * 12
    assert [p["id"] for p in first.result()[0]] == [0] and len(two._tracks) == 0
