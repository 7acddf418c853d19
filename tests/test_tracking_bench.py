"""The labelled tracking set and its benchmark: splits share no source file, truth boxes are where the cut-outs
were pasted (checked on the decoded clip), and the scoring is motmetrics' (perfect tracks score 1, swapped
identities count switches)."""

from __future__ import annotations

import json

import av
import numpy as np
import pytest
from PIL import Image

from benchmarks.tracking import accumulate, line_errors, mot_summary
from training.corpus.compose_v3 import split_violations
from training.perception.detset_sources import Source, assign_splits, available, inventory
from training.perception.trackset import build, build_clip

needs_sources = pytest.mark.skipif(len(available()) < len(inventory()),
                                   reason="tuxpaint-stamps-default / tuxtype-data not installed")


@needs_sources
def test_clips_use_only_their_splits_files(tmp_path):
    build(tmp_path, seed=0, clips={"val": 1, "test": 1, "train": 1})
    assert split_violations(tmp_path) == {}
    split_of = assign_splits(available(), 0).split_of
    for path in sorted((tmp_path / "truth").glob("*.json")):
        truth = json.loads(path.read_text())
        assert {split_of[k] for k in truth["sources"]} == {truth["split"]}, path.name
        assert (tmp_path / truth["clip"]).stat().st_size > 10_000
        assert len(truth["frames"]) == int(truth["duration_s"] * truth["fps"])


@needs_sources
def test_a_larger_split_keeps_its_first_clips(tmp_path):
    """`--val 30` (the round-3 val set) adds clips after the 6 of the default build: its first clips are the
    same clips (each clip's draws are seeded by its index), and the new ones use only val's files."""
    build(tmp_path / "small", seed=0, clips={"val": 1})
    build(tmp_path / "large", seed=0, clips={"val": 2})
    small, large = (json.loads((tmp_path / d / "truth" / "val000.json").read_text()) for d in ("small", "large"))
    assert small == large
    split_of = assign_splits(available(), 0).split_of
    extra = json.loads((tmp_path / "large" / "truth" / "val001.json").read_text())
    assert {split_of[k] for k in extra["sources"]} == {"val"} and extra["frames"] != large["frames"]


@needs_sources
def test_a_split_added_later_keeps_the_summary_of_the_others(tmp_path):
    """`foresight train trackset --val 0 --test 0 --train N` into a built set (round 5's train clips) adds train
    to `trackset.json` and keeps what it said of val."""
    build(tmp_path, seed=0, clips={"val": 1, "test": 0})
    build(tmp_path, seed=0, clips={"val": 0, "test": 0, "train": 1})
    summary = json.loads((tmp_path / "trackset.json").read_text())
    assert sorted(summary["splits"]) == ["train", "val"] and summary["splits"]["val"]["clips"] == 1
    assert {p.name for p in (tmp_path / "truth").iterdir()} == {"val000.json", "train000.json"}


def test_truth_boxes_are_where_the_cutout_shows(tmp_path):
    """A white block cut-out on a black photo: in every decoded frame the bright pixels' box is the truth box."""
    cut = np.zeros((60, 40, 4), np.uint8)
    cut[5:55, 4:36] = 255  # opaque 32x50 block in a transparent margin
    Image.fromarray(cut).save(tmp_path / "block.png")
    Image.fromarray(np.zeros((480, 640, 3), np.uint8)).save(tmp_path / "black.png")
    pool = [Source("block", str(tmp_path / "block.png"), "person", "test", "CC0"),
            Source("black", str(tmp_path / "black.png"), None, "test", "CC0")]
    truth = build_clip(tmp_path / "c.mp4", np.random.default_rng(3), pool, "val")
    assert len(truth["objects"]) == 1  # seed 3 draws one walker: bright pixels are its alone
    checked = 0
    with av.open(str(tmp_path / "c.mp4")) as clip:
        for f, frame in enumerate(clip.decode(video=0)):
            boxes = truth["frames"][f]
            if len(boxes) != 1:  # one object: the truth's only ambiguity is several blocks touching
                continue
            ys, xs = np.nonzero(frame.to_ndarray(format="rgb24").mean(-1) > 128)
            _, x0, y0, x1, y1 = boxes[0]
            assert abs(xs.min() - x0) <= 2 and abs(xs.max() + 1 - x1) <= 2, f
            assert abs(ys.min() - y0) <= 2 and abs(ys.max() + 1 - y1) <= 2, f
            checked += 1
    assert checked >= 20


def _two_walkers() -> dict:
    """Two 20x30 boxes on a 100x100 picture at 4 frames a second, walking towards each other for 2 s."""
    frames = [[[0, 5 + 8 * f, 50, 25 + 8 * f, 80], [1, 75 - 8 * f, 10, 95 - 8 * f, 40]] for f in range(8)]
    return {"fps": 4, "size": [100, 100], "frames": frames, "crossings": {"door": {"left_to_right": 1}}}


def _path(truth: dict, who: list[int]) -> list[list[float]]:
    """A track's path following truth object `who[f]` at frame f (normalised boxes, as the pipeline's)."""
    out = []
    for f, k in enumerate(who):
        _, x0, y0, x1, y1 = truth["frames"][f][k]
        out.append([f / truth["fps"], x0 / 100, y0 / 100, x1 / 100, y1 / 100])
    return out


def test_perfect_tracks_score_one():
    truth = _two_walkers()
    tracks = [{"id": 7, "path": _path(truth, [0] * 8)}, {"id": 9, "path": _path(truth, [1] * 8)}]
    row = mot_summary([accumulate(truth, tracks)], ["clip"])["OVERALL"]
    assert row["mota"] == 1 and row["idf1"] == 1 and row["num_switches"] == 0
    assert row["precision"] == 1 and row["recall"] == 1 and row["num_frames"] == 8


def test_swapped_identities_are_switches():
    truth = _two_walkers()
    tracks = [{"id": 7, "path": _path(truth, [0] * 4 + [1] * 4)}, {"id": 9, "path": _path(truth, [1] * 4 + [0] * 4)}]
    row = mot_summary([accumulate(truth, tracks)], ["clip"])["OVERALL"]
    assert row["num_switches"] == 2 and row["idf1"] == 0.5 and row["mota"] == 0.875  # 1 - 2 switches / 16


def test_frames_without_tracks_are_misses_and_line_counts_are_compared():
    truth = _two_walkers()
    row = mot_summary([accumulate(truth, [{"id": 1, "path": _path(truth, [0] * 8)}])], ["clip"])["OVERALL"]
    assert row["recall"] == 0.5 and row["num_misses"] == 8 and row["num_frames"] == 8
    assert line_errors(truth, []) == (1, 1)
    crossings = [{"line": "door", "direction": "left_to_right"}, {"line": "door", "direction": "right_to_left"}]
    assert line_errors(truth, crossings) == (1, 1)


def test_misses_are_sorted_by_what_the_detector_had():
    """`benchmarks.tracking_misses` on a recorded clip through the real stage: a car coming in from the left
    edge that the detector scores 0.05 for its first second, then 0.9, and loses for good after 3 s; and a dog the
    truth does not hold, boxed for 1.5 s. The misses are the car's first second (a box under 0.1, before
    its first match, at the edge) and its last second (no box, after its last match, inside); the false boxes
    are the dog's six samples, on a track that matches no object and moved more than a tenth of the picture."""
    from benchmarks.tracking_misses import errors, shipped_setting

    fps, truth_frames, seconds = 12, [], []
    for s in range(4):
        frames = []
        for k in range(fps):
            t = s + k / fps
            x1 = 60 + 120 * t
            box = [max(0.0, x1 - 160), 300.0, x1, 380.0]
            truth_frames.append([[0, *box]])
            dets = [] if t >= 3 else [{"label": "car", "score": 0.05 if t < 1 else 0.9, "box": box}]
            if 1.5 <= t < 3:  # a dog nobody labelled, walking left along the top
                x0 = 500 - 60 * (t - 1.5)
                dets.append({"label": "dog", "score": 0.8, "box": [x0, 40, x0 + 120, 110]})
            frames.append({"t": t, "size": [640, 480], "detections": dets})
        seconds.append({"index": s, "frames": frames})
    truth = {"fps": fps, "size": [640, 480], "line": "count=0.95,0,0.95,1", "frames": truth_frames,
             "crossings": {}}
    missed, false = errors(truth, seconds, shipped_setting())
    assert missed == {("box, score < 0.1", "before its first match", "at the edge"): 4,
                      ("no box", "after its last match", "inside"): 4}
    assert false == {("dog", "matches no object", "moved >= 0.1"): 6}
