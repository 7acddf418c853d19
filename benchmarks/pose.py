"""MediaPipe's pose landmarker (today's pose) against MoveNet multipose on the labelled detection set's people.

    python -m benchmarks.pose [--set data/detset] [--split train|test] [--out docs/results/pose_<split>.json]

Per split: the share of true person boxes that get a skeleton (its keypoints' box, the visible ones as
`people.pose_box` takes them, has IoU >= 0.5 with the person box, or >= 80% of those keypoints lie inside it;
one skeleton per person, best first), the skeletons that match no person (and of those, the ones lying on another
labelled object by the same rule), and the median ms per image on one thread. Val has no person, so settings
are chosen on train (nothing is trained on it) and test is scored once. MediaPipe runs as the app runs it
(`PoseTracker`, VIDEO mode, `num_poses` 2), one fresh tracker per image so no image inherits another's person.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from models.encoders.people import MIN_VISIBLE, iou, pose_box

MIN_IOU, MIN_INSIDE = 0.5, 0.8


def keypoints_inside(landmarks: list[list[float]], box: list[float], w: int, h: int) -> float:
    """The share of a skeleton's visible keypoints (all when fewer than three are) that lie inside `box`."""
    seen = [lm for lm in landmarks if lm[3] >= MIN_VISIBLE]
    pts = seen if len(seen) >= 3 else landmarks
    hits = [box[0] <= lm[0] * w <= box[2] and box[1] <= lm[1] * h <= box[3] for lm in pts]
    return float(np.mean(hits)) if hits else 0.0


def match(skeletons: list[list[list[float]]], boxes: list[list[float]], w: int, h: int) -> dict[int, int]:
    """skeleton index -> box index, greedy on IoU + inside share, one to one, by the rule in the docstring."""
    pairs = []
    for i, lms in enumerate(skeletons):
        pb = pose_box(lms, w, h)
        for j, box in enumerate(boxes):
            alike, held = iou(pb, box), keypoints_inside(lms, box, w, h)
            if alike >= MIN_IOU or held >= MIN_INSIDE:
                pairs.append((alike + held, i, j))
    kept: dict[int, int] = {}
    for _, i, j in sorted(pairs, reverse=True):
        if i not in kept and j not in kept.values():
            kept[i] = j
    return kept


def mediapipe_skeletons():
    """Today's pose as the app runs it: a fresh `PoseTracker` per image (VIDEO mode keeps the last person)."""
    from models.encoders.visual import PoseTracker

    def run(rgb: np.ndarray) -> tuple[list, float]:
        tracker = PoseTracker(num_poses=2, model="mediapipe")
        try:
            t0 = time.perf_counter()
            found = tracker.track([rgb], [0.0])
            return [p["landmarks"] for p in found], time.perf_counter() - t0
        finally:
            tracker.close()

    return run


def movenet_skeletons():
    from models.encoders.movenet import MovenetPoses

    model = MovenetPoses()

    def run(rgb: np.ndarray) -> tuple[list, float]:
        t0 = time.perf_counter()
        found = model.poses(rgb)
        return [p["landmarks"] for p in found], time.perf_counter() - t0

    return run


ESTIMATORS = {"mediapipe": mediapipe_skeletons, "movenet-multipose": movenet_skeletons}


def score(run, root: Path, split: str) -> dict:
    from PIL import Image

    gt = json.loads((root / "annotations" / f"{split}.json").read_text())
    person = next(c["id"] for c in gt["categories"] if c["name"] == "person")
    by_image: dict[int, list[dict]] = {}
    for a in gt["annotations"]:
        by_image.setdefault(a["image_id"], []).append(a)
    people = found = false = on_objects = 0
    ms = []
    for im in gt["images"]:
        rgb = np.asarray(Image.open(root / im["file_name"]).convert("RGB"))
        w, h = rgb.shape[1], rgb.shape[0]
        skeletons, seconds = run(rgb)
        ms.append(1000 * seconds)
        anns = by_image.get(im["id"], [])
        xyxy = [[a["bbox"][0], a["bbox"][1], a["bbox"][0] + a["bbox"][2], a["bbox"][1] + a["bbox"][3]] for a in anns]
        persons = [b for b, a in zip(xyxy, anns, strict=True) if a["category_id"] == person]
        others = [b for b, a in zip(xyxy, anns, strict=True) if a["category_id"] != person]
        kept = match(skeletons, persons, w, h)
        people += len(persons)
        found += len(kept)
        stray = [s for i, s in enumerate(skeletons) if i not in kept]
        false += len(stray)
        on_objects += len(match(stray, others, w, h))
    return {"person_boxes": people, "persons_with_skeleton": found, "recall": found / max(people, 1),
            "false_skeletons": false, "false_on_objects": on_objects, "images": len(gt["images"]),
            "ms_per_image": float(np.median(ms))}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--set", type=Path, default=Path("data/detset"))
    p.add_argument("--split", default="train", choices=["train", "test"])
    p.add_argument("--out", type=Path, help="JSON (default docs/results/pose_<split>.json)")
    a = p.parse_args(argv)
    if not (a.set / "annotations" / f"{a.split}.json").is_file():
        print(f"error: no detection set at {a.set} (foresight train detset --out {a.set})", file=sys.stderr)
        return 2
    import cv2

    cv2.setNumThreads(1)
    report = {"set": str(a.set), "split": a.split, "min_iou": MIN_IOU, "min_inside": MIN_INSIDE,
              "estimators": {name: score(make(), a.set, a.split) for name, make in ESTIMATORS.items()}}
    print(f"| pose | persons with a skeleton | recall | false skeletons (on objects) | ms/image ({a.split}) |")
    print("| --- | --- | --- | --- | --- |")
    for name, r in report["estimators"].items():
        print(f"| {name} | {r['persons_with_skeleton']} / {r['person_boxes']} | {r['recall']:.2f} | "
              f"{r['false_skeletons']} ({r['false_on_objects']}) | {r['ms_per_image']:.1f} |")
    out = a.out or Path(f"docs/results/pose_{a.split}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1))
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
