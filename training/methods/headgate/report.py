"""Head report for a PreFM or grounder checkpoint: `python -m training.methods.headgate.report CKPT ...`.

Runs the three CHG stages on the checkpoint's attention heads with its own task loss on a dataset the
user names, and prints (and optionally writes as JSON) every head's gates and role. The checkpoint is
only read; gates are attached to a copy in memory and nothing is written back.

    PreFM:    python -m training.methods.headgate.report models/prefm/checkpoints/embedded_llp.pt \\
                  --root data/corpus_v2 --layout embedded --split val [--contrastive current:future]
    grounder: python -m training.methods.headgate.report models/trisense/checkpoints/embedded.pt \\
                  --data data/corpus/grounding/val.jsonl --features data/corpus/grounding/features

Exit status 0, or 2 with a one-line reason on bad input.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch

from models import checkpoints
from training.methods.headgate.chg import (
    CHGConfig,
    HeadReport,
    causal_head_gating,
    contrastive_head_gating,
    module_names,
)
from training.methods.headgate.tasks import (
    grounder_batches,
    grounder_dims,
    grounder_sample_loss,
    prefm_batches,
    prefm_sample_loss,
)
from training.methods.runner import format_table

PARTS = {"current": {"part": "current"}, "future": {"part": "future"}, "audio": {"modality": "audio"},
         "visual": {"modality": "visual"}}


def load_any(path: str | Path) -> tuple[str, torch.nn.Module]:
    """("prefm" | "grounder", model in eval mode) from a checkpoint of either format."""
    path = Path(path)
    fmt = checkpoints.read(path).get("format")
    if fmt == "foresight-prefm-v1":
        from models.prefm.online import load_checkpoint

        return "prefm", load_checkpoint(path)[0]
    if fmt == "foresight-trisense-v1":
        from models.trisense.grounder import load_checkpoint

        return "grounder", load_checkpoint(path)[0]
    raise ValueError(f"{path}: neither a PreFM nor a grounder checkpoint (format {fmt!r})")


def _prefm_data(model: torch.nn.Module, a: argparse.Namespace) -> tuple[list[dict], Any]:
    from training.prefm.data import ClipStore

    if not a.root:
        raise ValueError("a PreFM checkpoint needs --root (and --layout) of a dataset")
    store = ClipStore(a.layout, a.root, a.split, use_teacher=False)
    count = len(store) if a.limit <= 0 else min(a.limit, len(store))
    clips = [store.clip(i) for i in range(count)]
    return prefm_batches(clips, model.config, a.batch_size, np.random.default_rng(a.seed)), prefm_sample_loss()


def _grounder_data(model: torch.nn.Module, a: argparse.Namespace) -> tuple[list[dict], Any]:
    from models.sentences import shared_encoder
    from training.trisense.data import FeatureDir, load_annotations, usable_records

    if not a.data or not a.features:
        raise ValueError("a grounder checkpoint needs --data (annotations) and --features (directory)")
    records, _ = usable_records(load_annotations(a.data), FeatureDir(a.features))
    records = records[: a.limit] if a.limit > 0 else records
    if not records:
        raise ValueError(f"no usable records in {a.data}")
    texts = sorted({r.query for r in records})
    vectors = dict(zip(texts, shared_encoder().encode(texts), strict=True))
    batches = grounder_batches(records, FeatureDir(a.features), vectors, model.config.max_window_s,
                               grounder_dims(model), a.batch_size, a.seed)
    return batches, grounder_sample_loss


def head_report(model: torch.nn.Module, batches: list[dict], loss: Any, cfg: CHGConfig, seed: int = 0) -> HeadReport:
    """CHG over the batches, cycled."""
    cycle = itertools.cycle(batches)
    return causal_head_gating(model, lambda: next(cycle), loss, cfg, seed=seed)


def _contrastive(model: torch.nn.Module, batches: list[dict], spec: str, cfg: CHGConfig, seed: int) -> dict:
    keep, _, forget = spec.partition(":")
    if keep not in PARTS or forget not in PARTS or keep == forget:
        raise ValueError(f"--contrastive wants KEEP:FORGET from {sorted(PARTS)}, got {spec!r}")
    cycle = itertools.cycle(batches)

    def pair() -> tuple[dict, dict]:
        b = next(cycle)
        return b, b

    gates = contrastive_head_gating(model, pair, prefm_sample_loss(**PARTS[keep]), prefm_sample_loss(**PARTS[forget]),
                                    cfg, seed=seed)
    names = module_names(model)
    return {"keep": keep, "forget": forget,
            "gates": {n: [round(float(g), 4) for g in row] for n, row in zip(names, gates, strict=True)},
            "dropped": [f"{names[m]}#{h}" for m, h in (gates < 0.5).nonzero().tolist()]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m training.methods.headgate.report", description=__doc__.split("\n\n")[0])
    p.add_argument("checkpoint")
    p.add_argument("--root", help="PreFM: dataset folder")
    p.add_argument("--layout", default="embedded", choices=["llp", "unav", "embedded"], help="PreFM: dataset layout")
    p.add_argument("--split", default="val", help="PreFM: split to gate on (default val)")
    p.add_argument("--data", help="grounder: annotations (.jsonl or TriSense .json)")
    p.add_argument("--features", help="grounder: directory of <vid>.npz features")
    p.add_argument("--limit", type=int, default=0, help="use only the first N clips / records (0 = all)")
    p.add_argument("--steps", type=int, default=200, help="updates per CHG stage")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--contrastive", metavar="KEEP:FORGET", help="PreFM: also fit a contrastive mask, e.g. current:future")
    p.add_argument("--out", help="write the report as JSON here")
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    try:
        if a.steps < 1 or a.batch_size < 1:
            raise ValueError("--steps and --batch-size must be >= 1")
        kind, model = load_any(a.checkpoint)
        if a.contrastive and kind != "prefm":
            raise ValueError("--contrastive is defined for PreFM checkpoints (current/future, audio/visual)")
        batches, loss = (_prefm_data if kind == "prefm" else _grounder_data)(model, a)
        cfg = CHGConfig(steps=a.steps)
        report = head_report(model, batches, loss, cfg, a.seed)
        doc = {"checkpoint": str(a.checkpoint), "kind": kind, **report.to_dict()}
        if a.contrastive:
            doc["contrastive"] = _contrastive(model, batches, a.contrastive, cfg, a.seed)
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(format_table([{k: r[k] for k in ("module", "head", "G_plus", "G_minus", "role")} for r in doc["heads"]]))
    print("counts: " + ", ".join(f"{k} {v}" for k, v in doc["counts"].items()))
    if a.contrastive:
        print(f"contrastive keep {doc['contrastive']['keep']} / forget {doc['contrastive']['forget']}: drops "
              + (", ".join(doc["contrastive"]["dropped"]) or "nothing"))
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps(doc, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
