"""PreFM with stock vs FANformer attention on the embedded corpus: held-out F1 of the periodic sounds.

    python -m training.fanformer.prefm_periodic --corpus var/corpus_v2 \
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

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

from models.prefm.labels import LLP_INDEX
from models.prefm.metrics import TIOU_TENTHS, event_counts, segment_counts
from models.prefm.modeling_prefm import PreFM, preset
from models.prefm.online import load_checkpoint
from training.prefm.data import LAYOUTS, ClipStore
from training.prefm.trainer import TrainConfig, evaluate, predict_clip, train

PERIODIC = ("Telephone_bell_ringing", "Fire_alarm")
CONTRAST = ("Speech",)
RECIPE = dict(batch_size=32, lr=5e-4, lr_min=5e-6, warmup_epochs=10, val_every=10, distill=False)


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


def run_one(corpus: Path, layout: str, attention: str, seed: int, epochs: int, work: Path) -> dict:
    stores = {s: ClipStore(layout, corpus, s) for s in ("train", "val", "test")}
    tcfg = TrainConfig(variant="prefm", epochs=epochs, seed=seed, progress=False, **RECIPE)
    t0 = time.perf_counter()
    result = train(preset("small", positional=True, attention=attention), stores["train"], stores["val"], tcfg,
                   work / f"{attention}_{seed}.pt")
    model, _, _ = load_checkpoint(result.checkpoint)
    test = evaluate(model, stores["test"], "prefm")
    return {"attention": attention, "seed": seed, "best_epoch": result.best_epoch, "params": model.num_parameters(),
            "train_seconds": round(time.perf_counter() - t0, 1), "val_mean_evt_f1": result.best_val["mean_evt_f1"],
            "test_mean_evt_f1": test["mean_evt_f1"], "test_evt_f1_audio": test["evt_f1_avg_audio"],
            "classes": class_scores(model, stores["test"], PERIODIC + CONTRAST)}


def summarize(runs: list[dict]) -> dict:
    """Mean and sample std over seeds of every number, per attention."""
    out: dict[str, dict[str, list[float]]] = {}
    for r in runs:
        flat = {k: r[k] for k in ("val_mean_evt_f1", "test_mean_evt_f1", "test_evt_f1_audio")}
        for c, sc in r["classes"].items():
            flat.update({f"{c}_seg_f1": sc["seg_f1"], f"{c}_evt_f1": sc["evt_f1"]})
        flat["periodic_evt_f1"] = float(np.mean([r["classes"][c]["evt_f1"] for c in PERIODIC]))
        flat["periodic_seg_f1"] = float(np.mean([r["classes"][c]["seg_f1"] for c in PERIODIC]))
        for k, v in flat.items():
            out.setdefault(r["attention"], {}).setdefault(k, []).append(v)
    return {att: {k: {"mean": float(np.mean(v)), "std": float(np.std(v, ddof=1)) if len(v) > 1 else 0.0,
                      "per_seed": v} for k, v in d.items()} for att, d in out.items()}


def write_doc(out: Path, a: argparse.Namespace, argv: list[str] | None, runs: list[dict]) -> None:
    """The result JSON so far (rewritten after every run, so a long job leaves what it finished)."""
    doc = {"command": "python -m training.fanformer.prefm_periodic " + " ".join(argv or sys.argv[1:]),
           "recipe": {"preset": "small", "positional": True, "epochs": a.epochs, **RECIPE},
           "periodic_classes": list(PERIODIC), "runs": runs, "summary": summarize(runs)}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2) + "\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m training.fanformer.prefm_periodic", description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", default="var/corpus_v2", help="embedded corpus v2 folder")
    p.add_argument("--layout", choices=LAYOUTS, default="embedded")
    p.add_argument("--seeds", default="87,88,89")
    p.add_argument("--epochs", type=int, default=100)
    p.add_argument("--work", default="var/fanformer_prefm", help="folder for the checkpoints")
    p.add_argument("--out", default="docs/results/training/fanformer_prefm.json")
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    corpus, work = Path(a.corpus), Path(a.work)
    if not (corpus / "data_info" / "train_pd.csv").is_file():
        print(f"error: no encoded corpus at {corpus} (build it with foresight train corpus)", file=sys.stderr)
        return 2
    work.mkdir(parents=True, exist_ok=True)
    runs = []
    for seed in (int(s) for s in a.seeds.split(",")):
        for attention in ("plain", "fan"):
            runs.append(run_one(corpus, a.layout, attention, seed, a.epochs, work))
            r = runs[-1]
            print(f"{attention} seed {seed}: test mean evt F1 {r['test_mean_evt_f1']:.1f}, "
                  + ", ".join(f"{c} evt {s['evt_f1']:.1f}" for c, s in r["classes"].items()), flush=True)
            write_doc(Path(a.out), a, argv, runs)
    print(f"written {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
