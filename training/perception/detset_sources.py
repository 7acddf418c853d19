"""The labelled detection set's sources: real-photo cut-outs (with alpha masks) and real background photos.

The inventory is `detset_inventory.csv` beside this module (file, COCO class, package, licence), chosen by eye:
only Tux Paint stamps that are photographs with a clean alpha mask (drawings, silhouettes and renders left
out); backgrounds are landscape photos (tuxtype-data), scikit-image / scikit-learn sample photos without any
COCO object in them. Every file gets exactly one split through corpus v3's `assign_sources` (per COCO class
one cut-out to test, one to val when the class has three or more, the rest to train; backgrounds cut
60/15/25), so no file feeds two splits. Cut-outs are public here so the tracking set can move them over
backgrounds frame by frame (`load_cutout`, `detset.paste`).
"""

from __future__ import annotations

import csv
import hashlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from models.encoders.ssd import COCO90_IDS
from training.corpus.compose_v3 import SourcePools, assign_sources
from training.corpus.real_sources import TUXPAINT_STAMPS, Photo

INVENTORY = Path(__file__).with_name("detset_inventory.csv")
TUXTYPE_IMAGES = Path("/usr/share/tuxtype/images")

# The 80 COCO class names (COCO 2017 spelling) and their category ids.
COCO_CLASSES: tuple[str, ...] = (
    "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat", "traffic light",
    "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat", "dog", "horse", "sheep", "cow",
    "elephant", "bear", "zebra", "giraffe", "backpack", "umbrella", "handbag", "tie", "suitcase", "frisbee", "skis",
    "snowboard", "sports ball", "kite", "baseball bat", "baseball glove", "skateboard", "surfboard",
    "tennis racket", "bottle", "wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple", "sandwich",
    "orange", "broccoli", "carrot", "hot dog", "pizza", "donut", "cake", "chair", "couch", "potted plant", "bed",
    "dining table", "toilet", "tv", "laptop", "mouse", "remote", "keyboard", "cell phone", "microwave",
    "oven", "toaster", "sink", "refrigerator", "book", "clock", "vase", "scissors", "teddy bear", "hair drier",
    "toothbrush",
)
COCO_IDS: tuple[int, ...] = COCO90_IDS  # the detector's table (models/encoders/ssd.py), not a second copy
COCO_ID = dict(zip(COCO_CLASSES, COCO_IDS, strict=True))
# Darknet's coco.names (our detectors' labels) spells six classes differently.
DARKNET_SPELLING = {"motorbike": "motorcycle", "aeroplane": "airplane", "sofa": "couch", "pottedplant": "potted plant",
                    "diningtable": "dining table", "tvmonitor": "tv"}


def coco_id(label: str) -> int | None:
    """The COCO category id of a detector label (either spelling); None for a label outside COCO."""
    return COCO_ID.get(DARKNET_SPELLING.get(label, label))


@dataclass(frozen=True)
class Source:
    """One inventoried file: a cut-out of a COCO class, or a background (coco_class None)."""

    key: str
    locator: str
    coco_class: str | None
    package: str
    licence: str


def _locator(file: str, kind: str) -> str:
    if kind == "cutout":
        return str(TUXPAINT_STAMPS / file)
    where, name = file.split(":", 1)
    if where == "tuxtype":
        return str(TUXTYPE_IMAGES / name)
    if where == "skimage":
        from skimage import data

        return str(Path(data.__file__).parent / name)
    if where == "sklearn":
        import sklearn.datasets

        return str(Path(sklearn.datasets.__file__).parent / "images" / name)
    raise ValueError(f"{INVENTORY}: unknown source {file!r}")


@cache
def inventory() -> tuple[Source, ...]:
    """Every inventoried cut-out and background, in the CSV's order."""
    out = []
    with INVENTORY.open(newline="") as fh:
        for row in csv.DictReader(fh):
            kind, cls = row["kind"], row["coco_class"] or None
            if kind not in ("cutout", "background") or (kind == "cutout") != (cls is not None):
                raise ValueError(f"{INVENTORY}: bad row {row}")
            if cls is not None and cls not in COCO_ID:
                raise ValueError(f"{INVENTORY}: {cls!r} is not a COCO class")
            prefix = "tuxpaint:" if kind == "cutout" else ""
            out.append(Source(prefix + row["file"], _locator(row["file"], kind), cls, row["package"],
                              row["licence"]))
    if len({s.key for s in out}) != len(out):
        raise ValueError(f"{INVENTORY}: a file is listed twice")
    return tuple(out)


def available() -> list[Source]:
    """The inventoried files installed on this machine."""
    return [s for s in inventory() if Path(s.locator).is_file()]


def content_digest(source: Source) -> str:
    return hashlib.sha1(Path(source.locator).read_bytes()).hexdigest()


def assign_splits(sources: list[Source], seed: int = 0) -> SourcePools:
    """Each file's split, by corpus v3's source-level mechanism (cut-outs grouped by COCO class)."""
    photos = [Photo(s.key, s.package, s.locator, s.coco_class) for s in sources]
    return assign_sources([], photos, seed)


@cache
def load_cutout(locator: str) -> np.ndarray:
    """RGBA uint8 cut-out trimmed to its alpha mask's tight box (alpha > 127)."""
    from PIL import Image

    rgba = np.asarray(Image.open(locator).convert("RGBA"))
    ys, xs = np.nonzero(rgba[..., 3] > 127)
    if ys.size == 0:
        raise ValueError(f"{locator}: the alpha mask is empty")
    return np.ascontiguousarray(rgba[ys.min(): ys.max() + 1, xs.min(): xs.max() + 1])


@cache
def load_background(locator: str) -> np.ndarray:
    """RGB uint8 background photo (grey photos as three equal channels)."""
    from PIL import Image

    return np.asarray(Image.open(locator).convert("RGB"))
