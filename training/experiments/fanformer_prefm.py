"""PreFM with stock vs FANformer attention on the embedded corpus: held-out F1 of the periodic sounds.

    python -m training.experiments.fanformer_prefm --corpus var/corpus_v2 \
        --out docs/results/training/fanformer_prefm.json

The corpus (``foresight train corpus --out var/corpus_v2 --clips 200 --seed 1 --scripts 0.7``) carries
two periodic audio classes, a phone that rings again and again (Telephone_bell_ringing) and an alarm
clock's repeated beeps (Fire_alarm), and one that is not periodic (Speech). Both attentions train with
the shipped checkpoint's recipe (preset small, recency encodings, AdamW, batch 32, cosine schedule) for
the same number of epochs and seeds, are selected on the validation split, and are scored on the test
split: per class, segment F1 and event F1 (mean over tIoU 0.1-0.9) with counts pooled over the test
videos, plus the usual mean event F1 over all classes. This takes tens of minutes on one CPU core.
"""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path

import numpy as np

from models.prefm.labels import LLP_INDEX
from models.prefm.metrics import TIOU_TENTHS, event_counts, segment_counts
from models.prefm.modeling_prefm import PreFM
from training.prefm.compare import arg_parser, run_comparison, seed_statistics, train_and_test
from training.prefm.data import ClipStore
from training.prefm.trainer import predict_clip

PERIODIC = ("Telephone_bell_ringing", "Fire_alarm")
CONTRAST = ("Speech",)
PROG = "python -m training.experiments.fanformer_prefm"


def _f1(tp: float, fp: float, fn: float) -> float:
    return 100.0 * 2 * tp / (2 * tp + fp + fn) if (tp + fp + fn) else float("nan")


def class_scores(model: PreFM, store: ClipStore, classes: tuple[str, ...], modality: str = "audio",
                 threshold: float = 0.5) -> dict[str, dict[str, float]]:
    """Per class: segment F1 and event F1 (mean over tIoU 0.1-0.9), counts pooled over the split's videos."""
    idx = [LLP_INDEX[c] for c in classes]
    seg = np.zeros((3, len(idx)))
    evt = np.zeros((len(TIOU_TENTHS), 3, len(idx)))
    for i in range(len(store)):
        clip = store.clip(i)
        pred = (predict_clip(model, clip, "prefm")[modality][:, idx] >= threshold).astype(np.int64)
        gt = clip.labels[modality][:, idx]
        seg += np.array(segment_counts(pred, gt))
        for k, tenths in enumerate(TIOU_TENTHS):
            evt[k] += np.array(event_counts(pred, gt, tenths))
    return {c: {"seg_f1": _f1(*seg[:, j]), "evt_f1": float(np.mean([_f1(*evt[k, :, j]) for k in range(len(TIOU_TENTHS))])),
                "gt_seconds": float(seg[0, j] + seg[2, j])}
            for j, c in enumerate(classes)}


def run_one(a, attention: str, seed: int) -> dict:
    model, stores, record = train_and_test(Path(a.corpus), a.layout, seed, a.epochs,
                                           Path(a.work) / f"{attention}_{seed}.pt", {"attention": attention})
    return {"attention": attention, **record, "params": model.num_parameters(),
            "classes": class_scores(model, stores["test"], PERIODIC + CONTRAST)}


def summarize(runs: list[dict]) -> dict:
    """Mean and sample std over seeds of every number, per attention."""
    rows: dict[str, list[dict[str, float]]] = {}
    for r in runs:
        flat = {k: r[k] for k in ("val_mean_evt_f1", "test_mean_evt_f1", "test_evt_f1_audio")}
        for c, sc in r["classes"].items():
            flat.update({f"{c}_seg_f1": sc["seg_f1"], f"{c}_evt_f1": sc["evt_f1"]})
        flat["periodic_evt_f1"] = float(np.mean([r["classes"][c]["evt_f1"] for c in PERIODIC]))
        flat["periodic_seg_f1"] = float(np.mean([r["classes"][c]["seg_f1"] for c in PERIODIC]))
        rows.setdefault(r["attention"], []).append(flat)
    return seed_statistics(rows)


def describe(r: dict) -> str:
    return (f"test mean evt F1 {r['test_mean_evt_f1']:.1f}, "
            + ", ".join(f"{c} evt {s['evt_f1']:.1f}" for c, s in r["classes"].items()))


def main(argv: list[str] | None = None) -> int:
    a = arg_parser(PROG, __doc__.split("\n\n")[0], "var/fanformer_prefm",
                   "docs/results/training/fanformer_prefm.json").parse_args(argv)
    return run_comparison(a, PROG + " " + " ".join(argv or sys.argv[1:]), ("plain", "fan"), partial(run_one, a),
                          describe, lambda runs: {"periodic_classes": list(PERIODIC), "runs": runs,
                                                  "summary": summarize(runs)})


if __name__ == "__main__":
    raise SystemExit(main())
