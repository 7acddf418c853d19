"""Class taxonomies: LLP's 25 classes in the official order, and UnAV-100's names from its annotation JSON."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

# Order of AVVP-ECCV20 ``dataloader.py`` (ids_to_multinomial), used by every LLP label file.
LLP_CLASSES: tuple[str, ...] = (
    "Speech", "Car", "Cheering", "Dog", "Cat", "Frying_(food)", "Basketball_bounce", "Fire_alarm",
    "Chainsaw", "Cello", "Banjo", "Singing", "Chicken_rooster", "Violin_fiddle", "Vacuum_cleaner",
    "Baby_laughter", "Accordion", "Lawn_mower", "Motorcycle", "Helicopter", "Acoustic_guitar",
    "Telephone_bell_ringing", "Baby_cry_infant_cry", "Blender", "Clapping",
)
LLP_INDEX: dict[str, int] = {name: i for i, name in enumerate(LLP_CLASSES)}


def llp_multi_hot(names: list[str] | str) -> np.ndarray:
    """LLP class names (a list or a comma-joined string as in the split CSVs) -> 25-d multi-hot vector."""
    if isinstance(names, str):
        names = [n for n in names.split(",") if n.strip()]
    vec = np.zeros(len(LLP_CLASSES), dtype=np.float32)
    for name in names:
        key = name.strip()
        if key not in LLP_INDEX:
            raise ValueError(f"unknown LLP class {key!r}")
        vec[LLP_INDEX[key]] = 1.0
    return vec


def unav_class_names(annotation_json: str | Path) -> list[str]:
    """UnAV-100 class names ordered by ``label_id``, read from ``unav100_annotations.json``."""
    path = Path(annotation_json)
    if not path.is_file():
        raise FileNotFoundError(f"annotation file not found: {path}")
    data = json.loads(path.read_text())
    if "database" not in data:
        raise ValueError(f"{path}: expected a top-level 'database' key")
    by_id: dict[int, str] = {}
    for vid, entry in data["database"].items():
        for ann in entry.get("annotations", []):
            lid, label = int(ann["label_id"]), str(ann["label"])
            if by_id.setdefault(lid, label) != label:
                raise ValueError(f"{path}: label_id {lid} is both {by_id[lid]!r} and {label!r} (video {vid})")
    if not by_id:
        raise ValueError(f"{path}: no annotations")
    ids = sorted(by_id)
    if ids != list(range(len(ids))):
        raise ValueError(f"{path}: label ids are not contiguous from 0 (found {len(ids)} ids, max {ids[-1]})")
    return [by_id[i] for i in ids]
