"""Entry points behind `foresight train grounding ...` and `foresight eval grounding ...`.

Both return an exit status: 0 on success, 2 on bad input (one-line reason on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from models.trisense.baselines import TextMatchBaseline, equal_weights_config
from models.trisense.features import MODALITIES
from models.trisense.grounder import Grounder
from models.trisense.modeling_trisense import TriSenseConfig
from pipelines.sinks.exporters import prepare_output
from training.trisense.data import FeatureDir, MomentRecord, load_annotations, usable_records
from training.trisense.evaluate import (
    SETTINGS,
    evaluate,
    format_table,
    predict_model,
    predict_text,
    query_vectors,
    setting_average,
)
from training.trisense.trainer import TrainConfig, train


def _add_data_args(parser: argparse.ArgumentParser, split: str) -> None:
    parser.add_argument("--data", help="annotations: moment-retrieval .jsonl or TriSense-2M .json")
    parser.add_argument("--features", help="directory of <vid>.npz per-second features")
    parser.add_argument(
        "--synthetic", metavar="DIR",
        help=f"use the synthetic corpus in DIR ({split}.jsonl + features/), generating it first if absent",
    )
    parser.add_argument("--limit", type=int, default=0, help="use only the first N records (0 = all)")


def _resolve_data(args: argparse.Namespace, split: str) -> tuple[list[MomentRecord], FeatureDir]:
    if args.synthetic:
        root = Path(args.synthetic)
        if not (root / f"{split}.jsonl").is_file():
            if split != "train":
                raise FileNotFoundError(f"no synthetic corpus at {root} (train on it first)")
            from training.trisense.synthetic import generate

            generate(root)
        data, feat_dir = root / f"{split}.jsonl", root / "features"
    else:
        if not args.data or not args.features:
            raise ValueError("give --data and --features, or --synthetic DIR")
        data, feat_dir = Path(args.data), Path(args.features)
    features = FeatureDir(feat_dir)
    records, skipped = usable_records(load_annotations(data), features)
    if skipped:
        print(f"note: {skipped} records skipped (no features for their video)", file=sys.stderr)
    if args.limit > 0:
        records = records[: args.limit]
    if not records:
        raise ValueError(f"no usable records in {data}")
    return records, features


def _infer_dims(records: list[MomentRecord], features: FeatureDir) -> dict[str, int]:
    dims: dict[str, int] = {}
    for r in records[:50]:
        clip = features[r.vid]
        for m in MODALITIES:
            arr = getattr(clip, m)
            if arr is not None and m not in dims:
                dims[m] = int(arr.shape[1])
        if len(dims) == len(MODALITIES):
            break
    return dims


def train_main(argv: list[str] | None = None) -> int:
    """Train the grounder; `--with-equal-baseline` also trains the equal-weights model to `<out>.equal.pt`."""
    parser = argparse.ArgumentParser(prog="foresight train grounding", description=train_main.__doc__)
    _add_data_args(parser, "train")
    parser.add_argument("--out", required=True, help="checkpoint path (.pt)")
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=5e-4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--max-window", type=int, default=128, help="model window in seconds")
    parser.add_argument("--modality-dropout", type=float, default=0.5)
    parser.add_argument("--equal-weights", action="store_true", help="train with the connector disabled")
    parser.add_argument("--attention", choices=["plain", "fan"], default="plain",
                        help="fan: FANformer's Fourier pre-projection in the span encoder's attention")
    parser.add_argument("--with-equal-baseline", action="store_true",
                        help="also train the equal-weights model to <out stem>.equal.pt")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    try:
        if args.epochs < 1 or args.batch_size < 1:
            raise ValueError("--epochs and --batch-size must be >= 1")
        records, features = _resolve_data(args, "train")
        dims = _infer_dims(records, features)
        config = TriSenseConfig(
            visual_dim=dims.get("visual", 512), audio_dim=dims.get("audio", 128), speech_dim=dims.get("speech", 384),
            d_model=args.d_model, n_layers=args.layers, max_window_s=args.max_window,
            modality_dropout=args.modality_dropout, fixed_modality_weights=args.equal_weights,
            attention=args.attention,
        )
        out = prepare_output(args.out)  # before the training, not after it
        tc = TrainConfig(epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, seed=args.seed,
                         progress=not args.no_progress)
        source = {"data": str(args.synthetic or args.data)}
        runs = [(config, out)]
        if args.with_equal_baseline and not args.equal_weights:
            runs.append((equal_weights_config(config), out.with_suffix(".equal.pt")))
        for cfg, path in runs:
            t0 = time.time()
            _, info = train(cfg, records, features, path, tc, meta=source)
            print(f"saved {path} ({len(records)} records, {args.epochs} epochs, "
                  f"final loss {info['history'][-1]['total']:.3f}, {time.time() - t0:.0f} s)")
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def eval_main(argv: list[str] | None = None) -> int:
    """Compare the model, the text-matching baseline and the equal-weights model in four modality settings."""
    parser = argparse.ArgumentParser(prog="foresight eval grounding", description=eval_main.__doc__)
    _add_data_args(parser, "test")
    parser.add_argument("--checkpoint", required=True, help="trained grounder (.pt)")
    parser.add_argument("--equal-checkpoint", help="equal-weights model (default: <checkpoint stem>.equal.pt if present)")
    parser.add_argument("--no-text-baseline", action="store_true")
    parser.add_argument("--json", action="store_true", help="print the results as JSON instead of the table")
    parser.add_argument("--out", help="also write the JSON results to this file")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    try:
        grounder = Grounder.load(args.checkpoint)
        equal_path = Path(args.equal_checkpoint) if args.equal_checkpoint else Path(args.checkpoint).with_suffix(
            ".equal.pt")
        if args.equal_checkpoint and not equal_path.is_file():
            raise FileNotFoundError(f"no checkpoint at {equal_path}")
        equal = Grounder.load(equal_path, text_encoder=grounder.text_encoder) if equal_path.is_file() else None
        records, features = _resolve_data(args, "test")
        qvecs = query_vectors(records, grounder)
        methods = {"trisense": lambda r, f, k: predict_model(grounder, r, f, k, qvecs)}
        if not args.no_text_baseline:
            baseline = TextMatchBaseline(grounder.text_encoder)
            methods["text-match"] = lambda r, f, k: predict_text(baseline, r, f, k)
        if equal is not None:
            methods["equal-weights"] = lambda r, f, k: predict_model(equal, r, f, k, qvecs)
        else:
            print(f"note: no equal-weights checkpoint at {equal_path}; that row is omitted", file=sys.stderr)
        t0 = time.time()
        results = evaluate(methods, records, features, SETTINGS)
        payload = {"results": results, "mean_over_settings": {k: setting_average(results, k)
                                                              for k in ("R@0.5", "mIoU")},
                   "n_queries": len(records), "eval_s": round(time.time() - t0, 1)}
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.out:
        Path(args.out).write_text(json.dumps(payload, indent=2))
    if args.json:
        print(json.dumps(payload, indent=2))
    else:
        print(format_table(results))
        kinds = sorted({k for per in results.values() for s in per.values() for k in s if k != "all"})
        for kind in kinds:
            print(f"\nqueries about {kind}:")
            print(format_table(results, group=kind))
        print("\nmean over settings:", json.dumps(payload["mean_over_settings"]))
    return 0
