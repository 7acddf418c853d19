"""The corpus on disk: clip ids, truth and label files, split lists."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

from training.corpus.truth import ClipTruth, second_labels

SPLIT_FRACTIONS = {"train": 0.7, "val": 0.1, "test": 0.2}


def clip_ids(n: int) -> list[str]:
    return [f"clip{i:04d}" for i in range(n)]


def write_labels(root: Path, truth: ClipTruth, seconds: int | None = None) -> None:
    """PreFM layout labels `label/label/{audio,visual}/<id>.npy`, cut or zero-padded to `seconds` rows."""
    labels = second_labels(truth)
    for modality, y in labels.items():
        if seconds is not None and seconds != y.shape[0]:
            y = y[:seconds] if seconds < y.shape[0] else np.concatenate([y, np.zeros((seconds - y.shape[0], y.shape[1]),
                                                                                     y.dtype)])
        path = root / "label" / "label" / modality / f"{truth.clip_id}.npy"
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, y)


def load_truths(root: str | Path) -> list[ClipTruth]:
    """Every clip's truth from `<root>/truth/*.json`, in id order."""
    folder = Path(root) / "truth"
    if not folder.is_dir():
        raise FileNotFoundError(f"no composed corpus at {root} (missing truth/)")
    return [ClipTruth.from_dict(json.loads(p.read_text())) for p in sorted(folder.glob("*.json"))]


def write_split_files(root: Path, truths: list[ClipTruth], lengths: dict[str, int] | None = None) -> None:
    """`data_info/<split>_pd.csv` (filename,length) for PreFM and `grounding/<split>.jsonl` for the grounder."""
    lengths = lengths or {}
    (root / "data_info").mkdir(parents=True, exist_ok=True)
    (root / "grounding").mkdir(parents=True, exist_ok=True)
    for split in SPLIT_FRACTIONS:
        members = [t for t in truths if t.split == split]
        with (root / "data_info" / f"{split}_pd.csv").open("w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(["filename", "length"])
            for t in members:
                writer.writerow([t.clip_id, lengths.get(t.clip_id, t.duration)])
        with (root / "grounding" / f"{split}.jsonl").open("w") as fh:
            for t in members:
                for q in t.queries:
                    fh.write(json.dumps(q) + "\n")


def corpus_yamnet(root: str | Path) -> str:
    """Which YAMNet ("float" or "w8a8") scored the corpus's stored audio features, read from its encoder manifest
    (`models/encoders/embedded.py` stamps "|yamnet-float" into the version; w8a8 corpora predate the stamp)."""
    manifests = sorted((Path(root) / "manifest" / "embedded").glob("*.json"))
    if not manifests:
        raise FileNotFoundError(f"no encoded corpus at {root} (missing manifest/embedded/)")
    return "float" if "|yamnet-float" in json.loads(manifests[0].read_text()).get("version", "") else "w8a8"


def check_corpus_yamnet(root: str | Path, model: str) -> None:
    """ValueError when the corpus's tags come from another YAMNet than the one `model` calibrates for."""
    stored = corpus_yamnet(root)
    if stored != model:
        raise ValueError(f"{root} holds {stored} YAMNet scores but the settings are for {model}: "
                         f"run with FORESIGHT_YAMNET={stored}, or rebuild the corpus with FORESIGHT_YAMNET={model}")
