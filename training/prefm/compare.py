"""Seed-by-seed comparisons of PreFM training options on an embedded corpus.

The long runs behind docs/training/fanformer.md and selective.md share one recipe (the shipped
checkpoint's), one command line, one training-and-test step, and one way to record: the result JSON is
rewritten after every run, so a long job leaves what it finished. Each script only says what varies and
what it scores.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from models.prefm.modeling_prefm import PreFM, preset
from models.prefm.online import load_checkpoint
from training.prefm.data import LAYOUTS, ClipStore
from training.prefm.trainer import TrainConfig, evaluate, train

RECIPE = dict(batch_size=32, lr=5e-4, lr_min=5e-6, warmup_epochs=10, val_every=10, distill=False)


def arg_parser(prog: str, description: str, work: str, out: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=description)
    p.add_argument("--corpus", default="var/corpus_v2", help="embedded corpus v2 folder")
    p.add_argument("--layout", choices=LAYOUTS, default="embedded")
    p.add_argument("--seeds", default="87,88,89")
    p.add_argument("--epochs", type=int, default=100)
    p.add_argument("--work", default=work, help="folder for the checkpoints")
    p.add_argument("--out", default=out)
    return p


def corpus_error(corpus: Path) -> int | None:
    """Exit status 2 with one line when `corpus` holds no encoded corpus, else None."""
    if (corpus / "data_info" / "train_pd.csv").is_file():
        return None
    print(f"error: no encoded corpus at {corpus} (build it with foresight train corpus)", file=sys.stderr)
    return 2


def train_and_test(corpus: Path, layout: str, seed: int, epochs: int, checkpoint: Path,
                   model_options: dict | None = None, **train_options) -> tuple[PreFM, dict[str, ClipStore], dict]:
    """Train with the recipe, reload the best validation checkpoint and score it on the test split.

    Returns the model, the three stores and the run's common record (seed, best epoch, time, val and
    test mean event F1, test audio event F1)."""
    stores = {s: ClipStore(layout, corpus, s) for s in ("train", "val", "test")}
    tcfg = TrainConfig(variant="prefm", epochs=epochs, seed=seed, progress=False, **RECIPE, **train_options)
    t0 = time.perf_counter()
    result = train(preset("small", positional=True, **(model_options or {})), stores["train"], stores["val"], tcfg,
                   checkpoint)
    model, _, _ = load_checkpoint(result.checkpoint)
    test = evaluate(model, stores["test"], "prefm")
    return model, stores, {"seed": seed, "best_epoch": result.best_epoch,
                           "train_seconds": round(time.perf_counter() - t0, 1),
                           "val_mean_evt_f1": result.best_val["mean_evt_f1"], "test_mean_evt_f1": test["mean_evt_f1"],
                           "test_evt_f1_audio": test["evt_f1_avg_audio"]}


def seed_statistics(rows: dict[str, list[dict[str, float]]]) -> dict[str, dict]:
    """Per variant and number: mean, sample std and the per-seed values."""
    return {variant: {k: {"mean": float(np.mean([r[k] for r in rs])),
                          "std": float(np.std([r[k] for r in rs], ddof=1)) if len(rs) > 1 else 0.0,
                          "per_seed": [r[k] for r in rs]} for k in rs[0]}
            for variant, rs in rows.items()}


def write_doc(out: Path, command: str, a: argparse.Namespace, doc: dict) -> None:
    """The result JSON so far: the command, the recipe and `doc` (runs and summary)."""
    full = {"command": command, "recipe": {"preset": "small", "positional": True, "epochs": a.epochs, **RECIPE},
            **doc}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(full, indent=2) + "\n")


def run_comparison(a: argparse.Namespace, command: str, variants: tuple[str, ...],
                   run_one: Callable[[str, int], dict], describe: Callable[[dict], str],
                   document: Callable[[list[dict]], dict]) -> int:
    """Every seed of `a.seeds` times every variant; `document(runs)` is what the JSON holds besides the
    command and recipe, rewritten after each run."""
    torch.set_num_threads(1)
    if (status := corpus_error(Path(a.corpus))) is not None:
        return status
    Path(a.work).mkdir(parents=True, exist_ok=True)
    runs: list[dict] = []
    for seed in (int(s) for s in a.seeds.split(",")):
        for variant in variants:
            runs.append(run_one(variant, seed))
            print(f"{variant} seed {seed}: {describe(runs[-1])}", flush=True)
            write_doc(Path(a.out), command, a, document(runs))
    print(f"written {a.out}")
    return 0
