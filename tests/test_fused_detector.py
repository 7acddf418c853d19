"""The fused SSD + NanoDet detector (models/encoders/fused.py): weighted box fusion's rule on hand-made boxes, the
real pair on scikit-image's photos, and the tracker's score thresholds it brings (docs/tracking.md, Round 6)."""

from __future__ import annotations

import numpy as np
import pytest
from skimage import data

from app.cli import build_parser
from app.services.settings import analysis_options, parse_args
from models.encoders.detectors import make_detector
from models.encoders.fused import MEMBERS, fuse
from pipelines.stages.config import StageConfig

WEIGHTS = (2.0, 1.0)


def box(label: str, score: float, xyxy: list[float]) -> dict:
    return {"label": label, "score": score, "box": xyxy}


def test_a_box_both_see_is_one_box_scored_by_both_and_placed_between():
    ssd, nano = [box("dog", 0.6, [10, 10, 110, 110])], [box("dog", 0.9, [20, 10, 120, 110])]
    (fused,) = fuse([ssd, nano], WEIGHTS, floor=0.0)
    assert fused["label"] == "dog" and fused["score"] == pytest.approx((2 * 0.6 + 0.9) / 3, abs=1e-3)
    # the score-weighted mean of the members (weights 1.2 and 0.9): x0 = (1.2 * 10 + 0.9 * 20) / 2.1
    assert fused["box"][0] == pytest.approx((1.2 * 10 + 0.9 * 20) / 2.1, abs=0.1) and fused["box"][2] > 110


def test_a_box_one_detector_sees_keeps_its_weights_share_and_the_floor_drops_it():
    nano_only = [box("sheep", 0.6, [0, 0, 50, 50])]
    (alone,) = fuse([[], nano_only], WEIGHTS, floor=0.0)
    assert alone["score"] == pytest.approx(0.6 / 3, abs=1e-3)
    assert fuse([[], nano_only], WEIGHTS, floor=0.25) == []
    (ssd_alone,) = fuse([nano_only, []], WEIGHTS, floor=0.0)
    assert ssd_alone["score"] == pytest.approx(2 * 0.6 / 3, abs=1e-3)


def test_boxes_apart_or_of_other_labels_stay_apart_and_each_detector_counts_once():
    ssd = [box("car", 0.8, [0, 0, 100, 100]), box("car", 0.5, [5, 0, 105, 100])]  # two SSD boxes on one car
    nano = [box("car", 0.7, [300, 0, 400, 100]), box("truck", 0.9, [0, 0, 100, 100])]
    out = fuse([ssd, nano], WEIGHTS, floor=0.0)
    assert sorted((d["label"], d["score"]) for d in out) == [("car", pytest.approx(0.233, abs=1e-3)),
                                                            ("car", pytest.approx(0.533, abs=1e-3)),
                                                            ("truck", pytest.approx(0.3, abs=1e-3))]
    assert [d["score"] for d in out] == sorted((d["score"] for d in out), reverse=True)


@pytest.fixture(scope="module")
def fused():
    return make_detector("ssd-mobilenetv2+nanodet")


def test_the_pair_finds_the_astronaut_and_the_cup(fused):
    astronaut = fused.detect(np.ascontiguousarray(data.astronaut()))
    assert astronaut[0]["label"] == "person" and astronaut[0]["score"] > 0.5
    coffee = [d["label"] for d in fused.detect(np.ascontiguousarray(data.coffee()))]
    assert "cup" in coffee and "toilet" not in coffee
    assert [(m.name, m.conf) for m in fused.members] == [(name, floor) for name, _, floor in MEMBERS]
    # the fused scores are the members' own, fused: the astronaut is both detectors' person
    ssd, nano = (m.detect(np.ascontiguousarray(data.astronaut())) for m in fused.members)
    assert fuse([ssd, nano], fused.weights, fused.conf) == astronaut


def test_the_tracker_takes_the_detectors_thresholds_unless_set(tmp_path):
    assert StageConfig().tracker_scores() == (0.1, 0.2)
    assert StageConfig(detector="ssd-mobilenetv2+nanodet").tracker_scores() == (0.15, 0.3)
    assert StageConfig(detector="ssd-mobilenetv2+nanodet", track_min_score=0.05).tracker_scores() == (0.05, 0.3)
    assert StageConfig(track_min_score=0.4).tracker_scores() == (0.4, 0.4)  # ByteTrack's high is at least the floor
    parser = build_parser()
    args = parse_args(parser, ["analyze", "clip.mp4", "--detector", "ssd-mobilenetv2+nanodet", "--line",
                               "door=0.5,0,0.5,1"], parser.config_targets, env={})
    stages = analysis_options(args).stages
    assert stages.track and stages.detector == "ssd-mobilenetv2+nanodet" and stages.tracker_scores() == (0.15, 0.3)


def test_the_sweep_rebuilds_the_pairs_seconds_from_its_members_captures():
    """benchmarks/tracking_sweep replays the pair without running it: each member's capture down to its own floor,
    fused by the detector's `fuse` (a member's box under its floor is not the pair's)."""
    from benchmarks.tracking_sweep import fused_capture

    def clip(dets: list[dict]) -> list[list[dict]]:
        return [[{"index": 0, "frames": [{"t": 0.25, "size": [640, 480], "detections": dets}]}]]

    ssd = clip([box("dog", 0.6, [10, 10, 110, 110]), box("dog", 0.01, [300, 300, 310, 310])])
    nano = clip([box("dog", 0.9, [20, 10, 120, 110]), box("cat", 0.03, [0, 0, 5, 5])])
    ((second,),) = fused_capture([ssd, nano], WEIGHTS, 0.0)
    (frame,) = second["frames"]
    assert second["index"] == 0 and frame["t"] == 0.25 and frame["size"] == [640, 480]
    assert frame["detections"] == fuse([ssd[0][0]["frames"][0]["detections"][:1],
                                        nano[0][0]["frames"][0]["detections"][:1]], WEIGHTS, 0.0)
    assert [d["label"] for d in frame["detections"]] == ["dog"]
