"""Turn trained checkpoints into the ones the repository ships, stamped with the corpus they came from.

The shipped file keeps its loader's format (`foresight-prefm-v1` or the grounder's) and adds
`meta["corpus"] = {"seed", "clips", "train_ids", ...}` so anyone can check which clips it was trained on
(the leakage test does). Floating-point weights are stored as float16 only when the float32 file would be
larger than `max_mb`; both loaders copy them into float32 parameters.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from models import checkpoints
from training.corpus.layout import load_truths


def corpus_stamp(corpus_root: str | Path, trained_on: tuple[str, ...] = ("train",)) -> dict:
    """Seed, clip count, share of scripted clips (0 = v1) and the ids of the clips in the splits a model was
    trained on: enough to rebuild that corpus's splits and check the model never saw its test clips."""
    root = Path(corpus_root)
    meta = json.loads((root / "corpus.json").read_text())
    ids = [t.clip_id for t in load_truths(root) if t.split in trained_on]
    return {"name": root.name, "seed": meta["seed"], "clips": meta["clips"], "seconds": meta.get("seconds"),
            "scripts": meta.get("scripts", 0.0), "trained_on": list(trained_on), "train_ids": ids}


def coverage(corpus_root: str | Path, train_ids: list[str], class_names: list[str]) -> dict[str, list[str]]:
    """The classes with at least one labelled second in the training clips, per modality: what a model
    trained on them can be trusted to report (`meta["covers"]`, read by the default event output)."""
    root = Path(corpus_root) / "label" / "label"
    covers = {}
    for modality in ("audio", "visual"):
        seen = np.zeros(len(class_names), bool)
        for clip_id in train_ids:
            seen |= np.load(root / modality / f"{clip_id}.npy").any(axis=0)
        covers[modality] = [name for name, hit in zip(class_names, seen, strict=True) if hit]
    return covers


def stamp_coverage(checkpoint: str | Path, corpus_root: str | Path) -> dict[str, list[str]]:
    """Add `meta["covers"]` to a shipped checkpoint from its own corpus stamp's training clips."""
    payload = checkpoints.read(checkpoint)
    meta = dict(payload.get("meta") or {})
    meta["covers"] = coverage(corpus_root, meta["corpus"]["train_ids"], payload["config"]["class_names"])
    payload["meta"] = meta
    checkpoints.write(payload, checkpoint)
    return meta["covers"]


def ship(src: str | Path, dst: str | Path, stamp: dict, extra: dict | None = None, max_mb: float = 5.0,
         corpus_root: str | Path | None = None) -> Path:
    """Copy checkpoint `src` to `dst` with `meta["corpus"] = stamp` (and `extra` merged into meta); with
    `corpus_root`, also the classes its training clips cover (`meta["covers"]`)."""
    payload = checkpoints.read(src)
    if "state_dict" not in payload:
        raise ValueError(f"{src}: not a checkpoint with a state_dict")
    payload["meta"] = {**dict(payload.get("meta") or {}), **(extra or {}), "corpus": stamp}
    state = payload["state_dict"]
    size_mb = sum(v.numel() * v.element_size() for v in state.values()) / 2 ** 20
    if size_mb > max_mb:
        payload["state_dict"] = {k: v.half() if v.is_floating_point() else v for k, v in state.items()}
    dst = checkpoints.write(payload, dst)
    if corpus_root is not None and "class_names" in payload.get("config", {}):
        stamp_coverage(dst, corpus_root)
    return dst
