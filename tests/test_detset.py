"""The labelled detection set: split hygiene by source file, its counts, and the benchmark's pycocotools scoring."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from benchmarks.detectors import coco_scores
from training.corpus.compose_v3 import split_violations
from training.perception.detset import build, paste, tight_box
from training.perception.detset_sources import COCO_CLASSES, COCO_ID, available, content_digest, inventory

REPO = Path(__file__).resolve().parents[1]
needs_sources = pytest.mark.skipif(len(available()) < len(inventory()),
                                   reason="tuxpaint-stamps-default / tuxtype-data not installed")


def test_coco_categories_are_the_80_with_their_ids():
    assert len(COCO_CLASSES) == 80 and COCO_ID["person"] == 1 and COCO_ID["toothbrush"] == 90
    assert COCO_ID["sports ball"] == 37 and COCO_ID["teddy bear"] == 88


def test_box_is_the_visible_alpha_mask():
    cut = np.zeros((10, 20, 4), np.uint8)
    cut[2:8, 5:15] = 255  # opaque 10x6 block inside a transparent margin
    canvas = np.zeros((50, 50, 3), np.uint8)
    mask = paste(canvas, cut, x=-10, y=4, scale=2.0)  # 40x20 scaled, shifted half out of the frame
    assert tight_box(mask) == [0.0, 8.0, 20.0, 12.0]
    assert canvas[10, 5].tolist() == [255, 255, 255] and canvas[30, 30].tolist() == [0, 0, 0]


@needs_sources
def test_no_file_twice_in_the_inventory():
    digests = Counter(content_digest(s) for s in available())
    assert max(digests.values()) == 1


@pytest.fixture(scope="module")
def small_set(tmp_path_factory):
    root = tmp_path_factory.mktemp("detset")
    summary = build(root, seed=0, images={"train": 40, "val": 25, "test": 40}, progress=False)
    return root, summary


@needs_sources
def test_small_set_is_split_by_source_file(small_set):
    root, _ = small_set
    assert split_violations(root) == {}
    split_of = json.loads((root / "sources.json").read_text())
    for split in ("train", "val", "test"):
        coco = json.loads((root / "annotations" / f"{split}.json").read_text())
        used = {k for im in coco["images"] for k in im["sources"]} | {a["source"] for a in coco["annotations"]}
        assert used and {split_of[k] for k in used} == {split}, split


def test_split_violations_sees_a_shared_cutout(tmp_path):
    (tmp_path / "truth").mkdir()
    for name, split, src in (("a", "train", ["tuxpaint:dog.png", "bg1"]), ("b", "test", ["tuxpaint:dog.png"])):
        (tmp_path / "truth" / f"{name}.json").write_text(json.dumps({"split": split, "sources": src}))
    assert split_violations(tmp_path) == {"tuxpaint:dog.png": ["test", "train"]}


@needs_sources
def test_small_set_counts_and_boxes(small_set):
    root, summary = small_set
    boxes = sum(s["boxes"] for s in summary["splits"].values())
    classes = {c for s in summary["splits"].values() for c in s["per_class"]}
    assert boxes >= 200 and len(classes) >= 12
    coco = json.loads((root / "annotations" / "test.json").read_text())
    assert {c["name"] for c in coco["categories"]} == set(COCO_CLASSES)
    for a in coco["annotations"]:
        x, y, w, h = a["bbox"]
        assert 0 <= x and 0 <= y and x + w <= 640 and y + h <= 480 and min(w, h) >= 16 and a["occluded"] <= 0.4


def test_built_set_meets_the_issue():
    summary_path = REPO / "data" / "detset" / "detset.json"
    if not summary_path.is_file():
        pytest.skip("detection set not built (foresight train detset --out data/detset)")
    summary = json.loads(summary_path.read_text())
    assert sum(s["boxes"] for s in summary["splits"].values()) >= 400
    assert len({c for s in summary["splits"].values() for c in s["per_class"]}) >= 12
    assert summary["splits"]["test"]["boxes"] >= 400 and summary["splits"]["test"]["classes"] >= 12
    assert split_violations(summary_path.parent) == {}


def _gt() -> dict:
    images = [{"id": i, "width": 640, "height": 480, "file_name": f"{i}.jpg"} for i in (1, 2)]
    boxes = [(1, 1, [10, 10, 100, 80]), (1, COCO_ID["dog"], [200, 50, 120, 150]), (2, 1, [300, 200, 60, 140]),
             (2, 37, [50, 300, 40, 40])]
    anns = [{"id": k + 1, "image_id": im, "category_id": c, "bbox": b, "area": b[2] * b[3], "iscrowd": 0}
            for k, (im, c, b) in enumerate(boxes)]
    return {"images": images, "annotations": anns,
            "categories": [{"id": COCO_ID[n], "name": n} for n in COCO_CLASSES]}


def test_scoring_gives_one_for_the_truth_and_less_for_moved_boxes():
    gt = _gt()
    exact = [{"image_id": a["image_id"], "category_id": a["category_id"], "bbox": a["bbox"], "score": 0.9}
             for a in gt["annotations"]]
    s = coco_scores(gt, exact)
    assert s["map50"] == pytest.approx(1.0) and s["map50_95"] == pytest.approx(1.0)
    assert set(s["ap50"]) == {"person", "dog", "sports ball"}
    moved = [{**d, "bbox": [d["bbox"][0] + 0.3 * d["bbox"][2], d["bbox"][1], d["bbox"][2], d["bbox"][3]]}
             for d in exact]  # IoU 0.54: still a hit at 0.5, a miss at stricter thresholds
    m = coco_scores(gt, moved)
    assert m["map50"] == pytest.approx(1.0) and m["map50_95"] < 0.5
    wrong = [{**d, "bbox": [d["bbox"][0] + d["bbox"][2], d["bbox"][1], d["bbox"][2], d["bbox"][3]]} for d in exact]
    assert coco_scores(gt, wrong)["map50"] == 0.0
    assert coco_scores(gt, [])["map50"] == 0.0
