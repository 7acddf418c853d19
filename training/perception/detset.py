"""`foresight train detset`: the labelled detection set, real-photo cut-outs composited onto real photos.

Each image is one background photo of its split (random 4:3 crop, 640x480) with 2-4 cut-outs of that split
pasted over it: random scale (never more than 2.5x a stamp's own pixels), position (a little may leave the
frame), mirror and brightness; about a third of the objects are placed against an earlier one, so some are
partly hidden (never more than 40% of any object). An object's box is the tight box of its alpha mask's
VISIBLE pixels (alpha > 127, after scaling, placing and the objects pasted over it), as COCO boxes the visible
extent. Splits are by source file (`detset_sources.assign_splits`): an image of a split draws only files of
that split, and `truth/<image>.json` records them so corpus v3's `split_violations` proves it.

Written under `--out` (default data/detset): `images/<split>/<id>.jpg`, `annotations/<split>.json` (COCO:
images, annotations, the 80 categories with their COCO ids), `truth/`, `sources.json` (each file's split) and
`detset.json` (counts per class and split).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np

from training.perception.detset_sources import (
    COCO_CLASSES,
    COCO_ID,
    Source,
    assign_splits,
    available,
    load_background,
    load_cutout,
)

WIDTH, HEIGHT = 640, 480
SPLITS = ("train", "val", "test")
IMAGES = {"train": 160, "val": 100, "test": 160}
MAX_UPSCALE = 2.5
MAX_HIDDEN = 0.4
MIN_SIDE = 16


def paste(canvas: np.ndarray, cutout: np.ndarray, x: int, y: int, scale: float, mirror: bool = False,
          gain: float = 1.0) -> np.ndarray:
    """Alpha-blend `cutout` (RGBA) scaled by `scale` with its top-left at (x, y) onto `canvas` (RGB, in place);
    returns the pasted object's mask in canvas pixels (alpha > 127, clipped to the frame). Moving scenes call
    this once per frame."""
    from PIL import Image

    h, w = cutout.shape[:2]
    sw, sh = max(1, round(w * scale)), max(1, round(h * scale))
    img = Image.fromarray(cutout)
    img = img.transpose(Image.Transpose.FLIP_LEFT_RIGHT) if mirror else img
    rgba = np.asarray(img.resize((sw, sh), Image.Resampling.LANCZOS), np.float32)
    mask = np.zeros(canvas.shape[:2], bool)
    x0, y0, x1, y1 = max(x, 0), max(y, 0), min(x + sw, canvas.shape[1]), min(y + sh, canvas.shape[0])
    if x0 >= x1 or y0 >= y1:
        return mask
    part = rgba[y0 - y: y1 - y, x0 - x: x1 - x]
    alpha = part[..., 3:4] / 255.0
    region = canvas[y0:y1, x0:x1].astype(np.float32)
    canvas[y0:y1, x0:x1] = np.clip(part[..., :3] * gain * alpha + region * (1 - alpha), 0, 255).astype(np.uint8)
    mask[y0:y1, x0:x1] = part[..., 3] > 127
    return mask


def tight_box(mask: np.ndarray) -> list[float] | None:
    """COCO [x, y, width, height] of a mask's pixels; None when it has none."""
    ys, xs = np.nonzero(mask)
    if ys.size == 0:
        return None
    return [float(xs.min()), float(ys.min()), float(xs.max() - xs.min() + 1), float(ys.max() - ys.min() + 1)]


def background_crop(rng: np.random.Generator, photo: np.ndarray) -> np.ndarray:
    """A random 4:3 crop covering at least 60% of the photo's width or height, resized to WIDTH x HEIGHT."""
    from PIL import Image

    h, w = photo.shape[:2]
    cw = min(w, round(h * WIDTH / HEIGHT))
    cw = round(cw * rng.uniform(0.6, 1.0))
    ch = round(cw * HEIGHT / WIDTH)
    x, y = int(rng.integers(0, w - cw + 1)), int(rng.integers(0, h - ch + 1))
    crop = Image.fromarray(photo[y: y + ch, x: x + cw]).resize((WIDTH, HEIGHT), Image.Resampling.BILINEAR)
    return np.array(crop)


def _placement(rng: np.random.Generator, sw: int, sh: int, boxes: list[list[float]]) -> tuple[int, int]:
    if boxes and rng.random() < 0.35:  # against an earlier object: some occlusion
        bx, by, bw, bh = boxes[int(rng.integers(len(boxes)))]
        cx, cy = bx + bw * rng.uniform(-0.1, 1.1), by + bh * rng.uniform(-0.1, 1.1)
        return int(cx - sw / 2), int(cy - sh / 2)
    return int(rng.integers(-sw // 8, WIDTH - sw + sw // 8 + 1)), int(rng.integers(-sh // 8, HEIGHT - sh + sh // 8 + 1))


def compose_image(rng: np.random.Generator, background: Source, cutouts: list[Source]
                  ) -> tuple[np.ndarray, list[dict]]:
    """One composite: the image and its objects ({"source", "coco_class", "bbox", "area", "occluded"})."""
    canvas = background_crop(rng, load_background(background.locator))
    placed: list[tuple[Source, np.ndarray, int]] = []  # (source, visible mask, full pixel count)
    for src in cutouts:
        cut = load_cutout(src.locator)
        side = rng.uniform(0.15, 0.6) * HEIGHT
        scale = min(side / max(cut.shape[:2]), MAX_UPSCALE)
        sw, sh = round(cut.shape[1] * scale), round(cut.shape[0] * scale)
        mirror, gain = bool(rng.random() < 0.5), float(rng.uniform(0.85, 1.15))
        for _ in range(30):
            x, y = _placement(rng, sw, sh, [tight_box(m) for _, m, _ in placed if m.any()])
            trial = canvas.copy()
            mask = paste(trial, cut, x, y, scale, mirror, gain)
            box = tight_box(mask)
            if box is None or min(box[2], box[3]) < MIN_SIDE or mask.sum() < 0.7 * (sw * sh) * _fill(cut):
                continue  # too small, or too much of it outside the frame
            if all((m & ~mask).sum() >= (1 - MAX_HIDDEN) * full for _, m, full in placed):
                canvas = trial
                placed = [(s, m & ~mask, full) for s, m, full in placed] + [(src, mask, int(mask.sum()))]
                break
    objects = [{"source": s.key, "coco_class": s.coco_class, "bbox": tight_box(m), "area": int(m.sum()),
                "occluded": round(1 - m.sum() / full, 3)} for s, m, full in placed]
    return canvas, objects


def _fill(cut: np.ndarray) -> float:
    return float((cut[..., 3] > 127).mean())


def _draw(rng: np.random.Generator, pool: list[Source]) -> tuple[Source, list[Source]]:
    """A background and 2-4 cut-outs of one split's pool (class first, then a file of that class)."""
    by_class: dict[str, list[Source]] = {}
    backgrounds = []
    for s in pool:
        (by_class.setdefault(s.coco_class, []) if s.coco_class else backgrounds).append(s)
    classes = sorted(by_class)
    n = int(rng.integers(2, 5))
    picks = [by_class[classes[int(rng.integers(len(classes)))]] for _ in range(n)]
    return backgrounds[int(rng.integers(len(backgrounds)))], [p[int(rng.integers(len(p)))] for p in picks]


def build(out: str | Path, seed: int = 0, images: dict[str, int] | None = None, progress: bool = True) -> dict:
    """Write the set under `out` (see the module docstring); returns the summary also written to detset.json."""
    from PIL import Image
    from tqdm import tqdm

    out, images = Path(out), images or IMAGES
    sources = available()
    pools = assign_splits(sources, seed)
    pool = {split: [s for s in sources if pools.split_of[s.key] == split] for split in SPLITS}
    for split in SPLITS:
        if not any(s.coco_class for s in pool[split]) or all(s.coco_class for s in pool[split]):
            raise ValueError(f"split {split} has no cut-outs or no backgrounds: install tuxpaint-stamps-default "
                             "and tuxtype-data (scripts/bootstrap.sh)")
    categories = [{"id": COCO_ID[n], "name": n, "supercategory": ""} for n in COCO_CLASSES]
    summary: dict = {"seed": seed, "size": [WIDTH, HEIGHT], "splits": {}}
    (out / "truth").mkdir(parents=True, exist_ok=True)
    (out / "annotations").mkdir(exist_ok=True)
    (out / "sources.json").write_text(json.dumps(pools.split_of, indent=1, sort_keys=True))
    total = sum(images[s] for s in SPLITS)
    bar = tqdm(total=total, desc="detset", disable=not progress)
    for si, split in enumerate(SPLITS):
        (out / "images" / split).mkdir(parents=True, exist_ok=True)
        coco: dict = {"info": {"description": "Foresight detection set", "split": split, "seed": seed},
                      "images": [], "annotations": [], "categories": categories}
        for i in range(images[split]):
            rng = np.random.default_rng([seed, si, i])
            background, cutouts = _draw(rng, pool[split])
            rgb, objects = compose_image(rng, background, cutouts)
            image_id = si * 100_000 + i + 1
            name = f"{split}{i:04d}"
            Image.fromarray(rgb).save(out / "images" / split / f"{name}.jpg", quality=95)
            used = sorted({background.key} | {o["source"] for o in objects})
            coco["images"].append({"id": image_id, "file_name": f"images/{split}/{name}.jpg", "width": WIDTH,
                                   "height": HEIGHT, "background": background.key, "sources": used})
            for o in objects:
                coco["annotations"].append({"id": len(coco["annotations"]) + 1 + si * 1_000_000,
                                            "image_id": image_id, "category_id": COCO_ID[o["coco_class"]],
                                            "bbox": o["bbox"], "area": o["area"], "iscrowd": 0,
                                            "source": o["source"], "occluded": o["occluded"]})
            (out / "truth" / f"{name}.json").write_text(json.dumps({"split": split, "sources": used}))
            bar.update()
        (out / "annotations" / f"{split}.json").write_text(json.dumps(coco))
        names = {c["id"]: c["name"] for c in categories}
        per_class = Counter(names[a["category_id"]] for a in coco["annotations"])
        summary["splits"][split] = {"images": len(coco["images"]), "boxes": len(coco["annotations"]),
                                    "classes": len(per_class), "per_class": dict(sorted(per_class.items())),
                                    "cutout_files": sum(1 for s in pool[split] if s.coco_class),
                                    "background_files": sum(1 for s in pool[split] if not s.coco_class)}
    bar.close()
    (out / "detset.json").write_text(json.dumps(summary, indent=1))
    return summary


def draw_examples(root: str | Path, out: str | Path, split: str = "test", n: int = 6) -> None:
    """A small PNG of the first `n` images of `split` with their boxes and class names drawn (docs/img)."""
    from PIL import Image, ImageDraw

    root = Path(root)
    coco = json.loads((root / "annotations" / f"{split}.json").read_text())
    names = {c["id"]: c["name"] for c in coco["categories"]}
    tw, th = WIDTH // 2, HEIGHT // 2
    sheet = Image.new("RGB", (3 * tw, th * ((n + 2) // 3)))
    for k, im in enumerate(coco["images"][:n]):
        img = Image.open(root / im["file_name"]).convert("RGB").resize((tw, th), Image.Resampling.LANCZOS)
        draw = ImageDraw.Draw(img)
        for a in (a for a in coco["annotations"] if a["image_id"] == im["id"]):
            x, y, w, h = (v / 2 for v in a["bbox"])
            draw.rectangle([x, y, x + w - 1, y + h - 1], outline=(255, 230, 0), width=2)
            draw.text((x + 3, y + 2), names[a["category_id"]], fill=(255, 230, 0))
        sheet.paste(img, ((k % 3) * tw, (k // 3) * th))
    sheet.quantize(256).save(out, optimize=True)  # a palette keeps the committed PNG small


def _folder(text: str) -> Path:
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty (name a folder)")
    return Path(text)


def set_parser(name: str, doc: str, counts: dict[str, int], unit: str) -> argparse.ArgumentParser:
    """`foresight train NAME`'s flags for a labelled set built by split: --out, --seed and a count per split."""
    p = argparse.ArgumentParser(prog=f"foresight train {name}", description=doc.split("\n\n")[0])
    p.add_argument("--out", type=_folder, default=Path(f"data/{name}"),
                   help=f"output folder (default data/{name})")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    for split, n in counts.items():
        p.add_argument(f"--{split}", type=int, default=n, metavar="N", help=f"{unit} in {split} (default {n})")
    return p


def build_main(argv: list[str]) -> int:
    p = set_parser("detset", __doc__, {s: IMAGES[s] for s in SPLITS}, "images")
    p.add_argument("--figure", type=Path, metavar="PNG", help="also draw six test images with their boxes")
    a = p.parse_args(argv)
    counts = {s: getattr(a, s) for s in SPLITS}
    if min(counts.values()) < 1:
        print("foresight: error: every split needs at least one image", file=sys.stderr)
        return 2
    try:
        summary = build(a.out, a.seed, counts, progress=sys.stderr.isatty())
    except (ValueError, OSError) as exc:
        print(f"foresight: error: {exc}", file=sys.stderr)
        return 2
    for split, s in summary["splits"].items():
        print(f"{split:5} {s['images']:4} images {s['boxes']:5} boxes {s['classes']:3} classes  "
              + ", ".join(f"{k} {v}" for k, v in s["per_class"].items()))
    if a.figure:
        draw_examples(a.out, a.figure)
    print(f"written to {a.out}")
    return 0
