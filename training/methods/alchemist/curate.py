"""Alchemist curation of Foresight training data: rank corpus seconds and clips for a compact fine-tuning set.

Foresight's models are trained on per-second feature vectors of composed clips (`embedded/{audio,visual}/
<id>.npy`, T x D) with per-second LLP labels (`label/label/{audio,visual}/<id>.npy`, T x 25). As in the paper,
a generative model pre-trained on all candidates is the estimator: here the caption-conditioned diffusion
model of `diffusion.py` over the standardised feature vectors, captioned by each second's active labels.
Every second is scored (`cond_gain` by default, the variant the miniature experiment's calibration picks),
standardised within its caption, and a clip's score is the mean over its seconds.

    python -m training.methods.alchemist.curate --corpus data/corpus --split train --k 20 --out curated.json

Nothing is written to the corpus; the JSON lists the clips best first and the top seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from training.methods.alchemist.diffusion import Denoiser, train_denoiser
from training.methods.alchemist.estimator import SCORERS, score, standardise_by_caption, top_k
from training.prefm.data import read_split_csv


@dataclass
class Ranking:
    """order: candidate indices, best first; scores: the (standardised) score of every candidate."""

    order: np.ndarray
    scores: np.ndarray
    variant: str


def _standardised(vectors: np.ndarray) -> np.ndarray:
    mu, sd = vectors.mean(0), vectors.std(0) + 1e-6
    return (np.clip((vectors - mu) / sd, -3.0, 3.0) / 2.0).astype(np.float32)


def curate(vectors: np.ndarray, captions: np.ndarray, variant: str = "cond_gain", steps: int = 600,
           per_caption: bool = True, seed: int = 0, progress=None) -> Ranking:
    """Pre-train the diffusion estimator on the candidates, score each one, rank them (best first).

    vectors: (N, D) candidates (images flattened or feature vectors); captions: (N, C) multi-hot labels."""
    if variant not in SCORERS:
        raise ValueError(f"unknown estimator variant {variant!r}; known: {', '.join(SCORERS)}")
    vectors, captions = np.asarray(vectors, np.float32), np.asarray(captions, np.float32)
    if vectors.ndim != 2 or captions.ndim != 2 or len(vectors) != len(captions) or len(vectors) < 2:
        raise ValueError(f"need (N, D) vectors and (N, C) captions with N >= 2, got {vectors.shape} and {captions.shape}")
    torch.manual_seed(seed)
    x = _standardised(vectors)
    model = Denoiser(x.shape[1], captions.shape[1], token_dim=16)
    train_denoiser(model, torch.tensor(x), torch.tensor(captions), steps, seed=seed, progress=progress,
                   desc="estimator")
    raw = score(model, x, captions, variant, seed=seed)
    scores = standardise_by_caption(raw, captions) if per_caption else raw
    return Ranking(top_k(scores, len(scores)), scores, variant)


def load_corpus_seconds(root: str | Path, split: str = "train", modality: str = "visual"
                        ) -> tuple[np.ndarray, np.ndarray, list[tuple[str, int]]]:
    """Per-second features, multi-hot labels and (clip id, second) keys of one split of an embedded corpus."""
    root = Path(root)
    feats, labels, keys = [], [], []
    for clip, _ in read_split_csv(root / "data_info" / f"{split}_pd.csv"):
        f = np.load(root / "embedded" / modality / f"{clip}.npy", allow_pickle=False)
        y = np.load(root / "label" / "label" / modality / f"{clip}.npy", allow_pickle=False)
        n = min(len(f), len(y))
        feats.append(f[:n])
        labels.append(y[:n])
        keys += [(clip, t) for t in range(n)]
    if not keys:
        raise ValueError(f"{root}: split {split!r} has no seconds")
    return np.concatenate(feats).astype(np.float32), np.concatenate(labels).astype(np.float32), keys


def curate_corpus(root: str | Path, k: int, split: str = "train", modality: str = "visual",
                  variant: str = "cond_gain", steps: int = 600, seed: int = 0, progress=None) -> dict:
    """The k best clips of a split (mean second score) and its k best seconds, as a JSON-ready dict."""
    vectors, captions, keys = load_corpus_seconds(root, split, modality)
    ranking = curate(vectors, captions, variant, steps, seed=seed, progress=progress)
    per_clip: dict[str, list[float]] = {}
    for (clip, _), s in zip(keys, ranking.scores, strict=True):
        per_clip.setdefault(clip, []).append(float(s))
    clips = sorted(per_clip, key=lambda c: -np.mean(per_clip[c]))
    return {"corpus": str(root), "split": split, "modality": modality, "variant": variant, "k": k,
            "clips": [{"clip": c, "score": round(float(np.mean(per_clip[c])), 4), "seconds": len(per_clip[c])}
                      for c in clips[:k]],
            "seconds": [{"clip": keys[i][0], "second": keys[i][1], "score": round(float(ranking.scores[i]), 4)}
                        for i in ranking.order[:k]]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m training.methods.alchemist.curate",
                                description="Rank an embedded corpus's clips and seconds with Alchemist's "
                                            "diffusion-based estimator; print or write the top k.")
    p.add_argument("--corpus", required=True, help="corpus root (embedded/, label/, data_info/)")
    p.add_argument("--split", default="train")
    p.add_argument("--modality", choices=("visual", "audio"), default="visual")
    p.add_argument("--k", type=int, default=20, help="how many clips and seconds to keep (default 20)")
    p.add_argument("--variant", choices=sorted(SCORERS), default="cond_gain")
    p.add_argument("--steps", type=int, default=600, help="estimator pre-training steps (default 600)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="write the ranking JSON here instead of printing it")
    a = p.parse_args(argv)
    if a.k < 1:
        p.error("--k must be at least 1")
    torch.set_num_threads(1)
    try:
        doc = curate_corpus(a.corpus, a.k, a.split, a.modality, a.variant, a.steps, a.seed)
    except (FileNotFoundError, ValueError) as exc:
        print(f"curate: error: {exc}", file=sys.stderr)
        return 2
    text = json.dumps(doc, indent=2)
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
