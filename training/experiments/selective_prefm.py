"""PreFM with the authors' future BCE vs selective learning on it: held-out future-step accuracy.

    python -m training.experiments.selective_prefm --corpus var/corpus_v2 \
        --out docs/results/training/selective_prefm.json

Both losses train PreFM with the shipped checkpoint's recipe (preset small, recency encodings, AdamW,
batch 32, cosine schedule) on the embedded corpus v2 for the same epochs and seeds, are selected on the
validation split by mean event F1 (the trainer's rule), and are scored on the test split: the future
head's per-second F1 at each horizon t+1 ... t+5 (``training.methods.selective.prefm.future_scores``) and the
current-second mean event F1. This takes tens of minutes on one CPU core.
"""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial
from pathlib import Path

from models.prefm.online import load_checkpoint
from training.methods.selective.prefm import future_scores, mask_shares
from training.prefm.compare import arg_parser, corpus_error, run_comparison, seed_statistics, train_and_test
from training.prefm.data import ClipStore

PROG = "python -m training.experiments.selective_prefm"


def run_one(a: argparse.Namespace, loss: str, seed: int) -> dict:
    model, stores, record = train_and_test(Path(a.corpus), a.layout, seed, a.epochs, Path(a.work) / f"{loss}_{seed}.pt",
                                           future_loss=loss)
    return {"future_loss": loss, **record, **future_scores(model, stores["test"])}


def summarize(runs: list[dict]) -> dict:
    keys = [k for k in runs[0] if k.startswith(("future_f1", "test_", "val_", "kept_"))]
    rows: dict[str, list[dict[str, float]]] = {}
    for r in runs:
        rows.setdefault(r["future_loss"], []).append({k: r[k] for k in keys})
    return seed_statistics(rows)


def diagnose(out: Path, store: ClipStore, work: Path) -> int:
    """Add ``kept_pos`` / ``kept_neg`` (``training.methods.selective.prefm.mask_shares``) to every run of ``out``."""
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
    p = arg_parser(PROG, __doc__.split("\n\n")[0], "var/selective_prefm", "docs/results/training/selective_prefm.json")
    p.add_argument("--diagnose-only", action="store_true",
                   help="add to --out's runs the share of positive / negative future targets the masks keep "
                        "(from the checkpoints in --work), without training")
    a = p.parse_args(argv)
    if a.diagnose_only:
        status = corpus_error(Path(a.corpus))
        return status if status is not None else diagnose(Path(a.out), ClipStore(a.layout, Path(a.corpus), "train"),
                                                          Path(a.work))
    return run_comparison(a, PROG + " " + " ".join(argv or sys.argv[1:]), ("bce", "selective"), partial(run_one, a),
                          lambda r: f"future F1 {r['future_f1_mean']:.1f}, test mean evt F1 {r['test_mean_evt_f1']:.1f}",
                          lambda runs: {"runs": runs, "summary": summarize(runs)})


if __name__ == "__main__":
    raise SystemExit(main())
