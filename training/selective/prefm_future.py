"""PreFM with the authors' future BCE vs selective learning on it: held-out future-step accuracy.

    python -m training.selective.prefm_future --corpus var/corpus_v2 \
        --out docs/results/training/selective_prefm.json

Both losses train PreFM with the shipped checkpoint's recipe (preset small, recency encodings, AdamW,
batch 32, cosine schedule) on the embedded corpus v2 for the same epochs and seeds, are selected on the
validation split by mean event F1 (the trainer's rule), and are scored on the test split: the future
head's per-second F1 at each horizon t+1 ... t+5 (``training.selective.prefm.future_scores``) and the
current-second mean event F1. This takes tens of minutes on one CPU core.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

from models.prefm.modeling_prefm import preset
from models.prefm.online import load_checkpoint
from training.prefm.data import LAYOUTS, ClipStore
from training.prefm.trainer import TrainConfig, evaluate, train
from training.selective.prefm import future_scores, mask_shares

RECIPE = dict(batch_size=32, lr=5e-4, lr_min=5e-6, warmup_epochs=10, val_every=10, distill=False)


def run_one(corpus: Path, layout: str, loss: str, seed: int, epochs: int, work: Path) -> dict:
    stores = {s: ClipStore(layout, corpus, s) for s in ("train", "val", "test")}
    tcfg = TrainConfig(variant="prefm", epochs=epochs, seed=seed, progress=False, future_loss=loss, **RECIPE)
    t0 = time.perf_counter()
    result = train(preset("small", positional=True), stores["train"], stores["val"], tcfg, work / f"{loss}_{seed}.pt")
    model, _, _ = load_checkpoint(result.checkpoint)
    test = evaluate(model, stores["test"], "prefm")
    return {"future_loss": loss, "seed": seed, "best_epoch": result.best_epoch,
            "train_seconds": round(time.perf_counter() - t0, 1), "val_mean_evt_f1": result.best_val["mean_evt_f1"],
            "test_mean_evt_f1": test["mean_evt_f1"], **future_scores(model, stores["test"])}


def summarize(runs: list[dict]) -> dict:
    keys = [k for k in runs[0] if k.startswith(("future_f1", "test_", "val_", "kept_"))]
    out: dict[str, dict] = {}
    for loss in dict.fromkeys(r["future_loss"] for r in runs):
        rs = [r for r in runs if r["future_loss"] == loss]
        out[loss] = {k: {"mean": float(np.mean([r[k] for r in rs])),
                         "std": float(np.std([r[k] for r in rs], ddof=1)) if len(rs) > 1 else 0.0,
                         "per_seed": [r[k] for r in rs]} for k in keys}
    return out


def write_doc(out: Path, a: argparse.Namespace, argv: list[str] | None, runs: list[dict]) -> None:
    """The result JSON so far (rewritten after every run, so a long job leaves what it finished)."""
    doc = {"command": "python -m training.selective.prefm_future " + " ".join(argv or sys.argv[1:]),
           "recipe": {"preset": "small", "positional": True, "epochs": a.epochs, **RECIPE},
           "runs": runs, "summary": summarize(runs)}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2) + "\n")


def diagnose(out: Path, store: ClipStore, work: Path) -> int:
    """Add ``kept_pos`` / ``kept_neg`` (``training.selective.prefm.mask_shares``) to every run of ``out``."""
    doc = json.loads(out.read_text())
    for r in doc["runs"]:
        model, _, _ = load_checkpoint(work / f"{r['future_loss']}_{r['seed']}.pt")
        r.update(mask_shares(model, store))
        print(f"{r['future_loss']} seed {r['seed']}: masks keep {100 * r['kept_pos']:.0f} % of positive and "
              f"{100 * r['kept_neg']:.0f} % of negative future targets", flush=True)
    doc["summary"] = summarize(doc["runs"])
    out.write_text(json.dumps(doc, indent=2) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m training.selective.prefm_future", description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", default="var/corpus_v2", help="embedded corpus v2 folder")
    p.add_argument("--layout", choices=LAYOUTS, default="embedded")
    p.add_argument("--seeds", default="87,88,89")
    p.add_argument("--epochs", type=int, default=100)
    p.add_argument("--work", default="var/selective_prefm", help="folder for the checkpoints")
    p.add_argument("--out", default="docs/results/training/selective_prefm.json")
    p.add_argument("--diagnose-only", action="store_true",
                   help="add to --out's runs the share of positive / negative future targets the masks keep "
                        "(from the checkpoints in --work), without training")
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    corpus, work = Path(a.corpus), Path(a.work)
    if not (corpus / "data_info" / "train_pd.csv").is_file():
        print(f"error: no encoded corpus at {corpus} (build it with foresight train corpus)", file=sys.stderr)
        return 2
    if a.diagnose_only:
        return diagnose(Path(a.out), ClipStore(a.layout, corpus, "train"), work)
    work.mkdir(parents=True, exist_ok=True)
    runs = []
    for seed in (int(s) for s in a.seeds.split(",")):
        for loss in ("bce", "selective"):
            runs.append(run_one(corpus, a.layout, loss, seed, a.epochs, work))
            r = runs[-1]
            print(f"{loss} seed {seed}: future F1 {r['future_f1_mean']:.1f}, test mean evt F1 "
                  f"{r['test_mean_evt_f1']:.1f}", flush=True)
            write_doc(Path(a.out), a, argv, runs)
    print(f"written {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
