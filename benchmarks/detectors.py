"""Every detector on the labelled detection set: mAP@0.5, mAP@0.5:0.95 (pycocotools), per-class AP@0.5, ms/frame.

    python -m benchmarks.detectors [--set data/detset] [--split val|test|both] [--out docs/results/detectors_val.json]

Detectors come from `models.encoders.detectors.MEASURED_DETECTORS` (the offered DETECTOR_NAMES plus candidates
measured but not offered, CenterNet). Timing is one thread (cv2 / onnxruntime set to 1), median ms of `detect` per frame over the split,
after one warm-up frame. Scores use a low confidence floor (`--conf`, default 0.05) for every detector alike.
Build the set first: `foresight train detset --out data/detset`.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import time
from pathlib import Path

import numpy as np

from training.perception.detset_sources import coco_id


def detector_names() -> tuple[str, ...]:
    from models.encoders.detectors import MEASURED_DETECTORS

    return tuple(MEASURED_DETECTORS)


def make(name: str, conf: float):
    from models.encoders.detectors import make_detector

    return make_detector(name, conf=conf)


def coco_scores(gt: dict, detections: list[dict]) -> dict:
    """mAP@0.5, mAP@0.5:0.95 and per-class AP@0.5 by pycocotools. `detections`: COCO results
    ({"image_id", "category_id", "bbox": [x, y, w, h], "score"})."""
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    with contextlib.redirect_stdout(io.StringIO()):
        truth = COCO()
        truth.dataset = json.loads(json.dumps(gt))
        truth.createIndex()
        present = sorted({a["category_id"] for a in gt["annotations"]})
        if not detections:
            return {"map50": 0.0, "map50_95": 0.0, "ap50": {truth.cats[c]["name"]: 0.0 for c in present}}
        found = truth.loadRes(detections)
        ev = COCOeval(truth, found, "bbox")
        ev.params.catIds = present
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    prec = ev.eval["precision"][0, :, :, 0, 2]  # IoU 0.5, all recall points, every class, all areas, 100 dets
    ap50 = {truth.cats[c]["name"]: float(np.mean(p[p > -1])) if (p > -1).any() else 0.0
            for c, p in zip(present, prec.T, strict=True)}
    return {"map50": float(ev.stats[1]), "map50_95": float(ev.stats[0]), "ap50": ap50}


def as_results(image_id: int, found: list[dict]) -> list[dict]:
    out = []
    for d in found:
        cid = coco_id(d["label"])
        if cid is not None:
            x0, y0, x1, y1 = d["box"]
            out.append({"image_id": image_id, "category_id": cid, "bbox": [x0, y0, x1 - x0, y1 - y0],
                        "score": float(d["score"])})
    return out


def run_split(detector, root: Path, split: str) -> dict:
    from PIL import Image

    gt = json.loads((root / "annotations" / f"{split}.json").read_text())
    results, ms = [], []
    frames = [(im["id"], np.asarray(Image.open(root / im["file_name"]).convert("RGB"))) for im in gt["images"]]
    detector.detect(frames[0][1].copy())  # warm-up
    for image_id, rgb in frames:
        t0 = time.perf_counter()
        found = detector.detect(rgb)
        ms.append(1000 * (time.perf_counter() - t0))
        results += as_results(image_id, found)
    return {**coco_scores(gt, results), "ms_per_frame": float(np.median(ms)), "images": len(frames),
            "boxes": len(gt["annotations"])}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--set", type=Path, default=Path("data/detset"))
    p.add_argument("--split", default="val", choices=["val", "test", "both"])
    p.add_argument("--conf", type=float, default=0.05)
    p.add_argument("--out", type=Path, help="JSON (default docs/results/detectors_<split>.json)")
    a = p.parse_args(argv)
    if not (a.set / "annotations" / "val.json").is_file():
        print(f"error: no detection set at {a.set} (foresight train detset --out {a.set})", file=sys.stderr)
        return 2
    import cv2

    cv2.setNumThreads(1)
    splits = ["val", "test"] if a.split == "both" else [a.split]
    report: dict = {"conf": a.conf, "set": str(a.set), "detectors": {}}
    for name in detector_names():
        det = make(name, a.conf)
        report["detectors"][name] = {s: run_split(det, a.set, s) for s in splits}
    print(format_table(report, splits))
    out = a.out or Path(f"docs/results/detectors_{a.split}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1))
    print(f"written to {out}")
    return 0


def format_table(report: dict, splits: list[str]) -> str:
    lines = []
    ref = report["detectors"].get("yolov3-tiny")
    for s in splits:
        lines.append(f"\n{s}: | detector | mAP@0.5 | mAP@0.5:0.95 | ms/frame (1 thread) | mAP@0.5 / YOLOv3-tiny "
                     "| ms / YOLOv3-tiny |\n| --- | --- | --- | --- | --- | --- |")
        for name, r in report["detectors"].items():
            x = r[s]
            base = ref[s] if ref else x
            lines.append(f"| {name} | {x['map50']:.3f} | {x['map50_95']:.3f} | {x['ms_per_frame']:.1f} | "
                         f"{x['map50'] / max(base['map50'], 1e-9):.2f} | {x['ms_per_frame'] / base['ms_per_frame']:.2f} |")
        classes = sorted({c for r in report["detectors"].values() for c in r[s]["ap50"]})
        lines.append(f"\n{s} AP@0.5 per class: | detector | " + " | ".join(classes) + " |")
        lines.append("| --- " * (len(classes) + 1) + "|")
        for name, r in report["detectors"].items():
            lines.append(f"| {name} | " + " | ".join(f"{r[s]['ap50'].get(c, 0.0):.2f}" for c in classes) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
