"""benchmarks/pose.py's matching rule on real skeletons: MoveNet's astronaut matches her box and no other, a
skeleton is matched to one box at most, and the numbers it reports add up on a tiny labelled set."""

from __future__ import annotations

import json

import numpy as np
from PIL import Image
from skimage import data

from benchmarks.pose import keypoints_inside, match, movenet_skeletons, score


def test_the_astronauts_skeleton_matches_her_box_only():
    skeletons, _ = movenet_skeletons()(np.ascontiguousarray(data.astronaut()))
    her, elsewhere = [0, 0, 380, 512], [400, 0, 512, 200]
    assert len(skeletons) == 1 and keypoints_inside(skeletons[0], her, 512, 512) > 0.9
    assert match(skeletons, [elsewhere, her], 512, 512) == {0: 1}
    assert match(skeletons, [elsewhere], 512, 512) == {}
    assert match(skeletons, [her, her], 512, 512) in ({0: 0}, {0: 1})  # one box per skeleton


def test_score_counts_found_people_and_false_skeletons(tmp_path):
    (tmp_path / "images").mkdir()
    (tmp_path / "annotations").mkdir()
    Image.fromarray(data.astronaut()).save(tmp_path / "images" / "a.png")
    Image.fromarray(data.coffee()).save(tmp_path / "images" / "c.png")
    gt = {"images": [{"id": 1, "file_name": "images/a.png"}, {"id": 2, "file_name": "images/c.png"}],
          "categories": [{"id": 1, "name": "person"}, {"id": 47, "name": "cup"}],
          "annotations": [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 380, 512]},
                          {"image_id": 2, "category_id": 47, "bbox": [160, 20, 250, 240]}]}
    (tmp_path / "annotations" / "x.json").write_text(json.dumps(gt))
    r = score(movenet_skeletons(), tmp_path, "x")
    assert (r["person_boxes"], r["persons_with_skeleton"], r["false_skeletons"], r["images"]) == (1, 1, 0, 2)
    assert r["recall"] == 1.0 and r["ms_per_image"] > 0
