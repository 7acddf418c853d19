"""A small synthetic corpus in PreFM's LLP layout whose events have predictable onsets.

It exists to exercise training and the three-way comparison before real embedded features exist;
numbers measured on it are synthetic, not a claim about real video.

Each clip is ``10 * video_num`` seconds of 1-fps audio and visual vectors (noise plus class
prototypes). Every event (class, modality audio / visual / both, 3-8 s) is announced by a cue: a
class-specific vector in the same modalities ``lead`` seconds before its onset. The event's own
evidence starts weak and ramps up (25 %, 50 %, then 100 % of the prototype), so the first seconds of an
event are hard to recognise from the present alone; a model that has learned what the cue foretells
can recognise them. Teacher features (``label/feature_label``) are nearly noise-free embeddings of
each second's labels plus a shared background direction, standing in for ONE-PEACE features.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np

from models.prefm.labels import LLP_CLASSES

RAMP = (0.25, 0.5)


def _unit(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def make_clip(rng: np.random.Generator, protos: dict[str, np.ndarray], cues: dict[str, np.ndarray],
              teach: np.ndarray, seconds: int, noise: float, lead: int, num_classes: int,
              active_classes: int) -> dict[str, np.ndarray]:
    dim_a, dim_v = protos["audio"].shape[1], protos["visual"].shape[1]
    feats = {"audio": noise * rng.standard_normal((seconds, dim_a)).astype(np.float32),
             "visual": noise * rng.standard_normal((seconds, dim_v)).astype(np.float32)}
    labels = {m: np.zeros((seconds, num_classes), np.float32) for m in ("audio", "visual")}
    for _ in range(int(rng.integers(2, 5))):
        c = int(rng.integers(active_classes))
        mods = [("audio",), ("visual",), ("audio", "visual")][int(rng.choice(3, p=[0.35, 0.25, 0.4]))]
        dur = int(rng.integers(3, 9))
        onset = int(rng.integers(lead + 1, seconds - 2))
        for m in mods:
            feats[m][onset - lead] += 3.0 * cues[m][c]
            for k, t in enumerate(range(onset, min(onset + dur, seconds))):
                amp = RAMP[k] if k < len(RAMP) else 1.0
                feats[m][t] += 3.0 * amp * protos[m][c]
                labels[m][t, c] = 1.0
    # Teacher: a shared "background" direction (teach[-1]) plus the embeddings of the active classes,
    # so that, as with real teacher features, silent seconds have a consistent feature too.
    teacher = {m: teach[-1] + labels[m] @ teach[:-1] + 0.05 * rng.standard_normal((seconds, teach.shape[1])).astype(np.float32)
               for m in ("audio", "visual")}
    return {"audio": feats["audio"], "visual": feats["visual"], "label_audio": labels["audio"],
            "label_visual": labels["visual"], "teacher_audio": teacher["audio"], "teacher_visual": teacher["visual"]}


def generate(root: str | Path, splits: dict[str, int] | None = None, video_num: int = 3, audio_dim: int = 32,
             visual_dim: int = 32, teacher_dim: int = 48, noise: float = 0.4, lead: int = 2,
             num_classes: int = 25, active_classes: int = 8, seed: int = 0) -> Path:
    """Write the corpus under ``root`` (LLP layout, CSVs in ``root/data_info``); returns ``root``.
    Events are drawn from the first ``active_classes`` LLP classes (labels stay 25-d)."""
    splits = splits or {"train": 300, "val": 40, "test": 80}
    root = Path(root)
    rng = np.random.default_rng(seed)
    protos = {"audio": _unit(rng, num_classes, audio_dim), "visual": _unit(rng, num_classes, visual_dim)}
    cues = {"audio": _unit(rng, num_classes, audio_dim), "visual": _unit(rng, num_classes, visual_dim)}
    teach = _unit(rng, num_classes + 1, teacher_dim)
    folders = {"audio": root / "data" / "CLAP", "visual": root / "data" / "CLIP",
               "label_audio": root / "label" / "label" / "audio", "label_visual": root / "label" / "label" / "visual",
               "teacher_audio": root / "label" / "feature_label" / "audio",
               "teacher_visual": root / "label" / "feature_label" / "visual"}
    for f in [*folders.values(), root / "data_info"]:
        f.mkdir(parents=True, exist_ok=True)
    seconds = 10 * video_num
    for split, count in splits.items():
        rows = []
        for i in range(count):
            name = f"syn_{split}_{i:05d}"
            clip = make_clip(rng, protos, cues, teach, seconds, noise, lead, num_classes, active_classes)
            for key, folder in folders.items():
                np.save(folder / f"{name}.npy", clip[key])
            present = np.maximum(clip["label_audio"], clip["label_visual"])
            per_chunk = [",".join(LLP_CLASSES[c] for c in np.flatnonzero(present[k * 10:(k + 1) * 10].any(0)))
                         for k in range(video_num)]
            rows.append([0 if video_num > 1 else 1, video_num, name, *per_chunk, *[""] * (6 - video_num)])
        with (root / "data_info" / f"{split}_pd.csv").open("w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["continual_event", "video_num", "filename", *[f"event_labels_{k}" for k in range(1, 7)]])
            writer.writerows(rows)
    return root


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Write the synthetic PreFM corpus (LLP layout).")
    p.add_argument("root")
    p.add_argument("--train", type=int, default=300)
    p.add_argument("--val", type=int, default=40)
    p.add_argument("--test", type=int, default=80)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    generate(a.root, {"train": a.train, "val": a.val, "test": a.test}, seed=a.seed)
    print(a.root)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
