"""Command-line entry points: ``foresight train prefm ...`` and ``foresight eval prefm ...``.

train: trains PreFM, the no-future ablation and/or the offline model on a dataset in one of the
layouts of ``training.prefm.data`` and writes ``<out>/<variant>.pt`` (best validation checkpoint).
eval: scores those checkpoints on a held-out split and prints a table (or JSON) of mean event-level
F1 (audio, visual, audio-visual), segment F1, per-second mAP, Type@AV and Event@AV.
Bad paths or layouts print one line on stderr and return 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from models.prefm.modeling_prefm import preset
from pipelines.sinks.exporters import prepare_output
from training.prefm.data import LAYOUTS, ClipStore
from training.prefm.trainer import SELECT_KEYS, VARIANTS, TrainConfig, evaluate_checkpoint, train

VARIANT_TITLES = {"prefm": "PreFM (online)", "nofuture": "no future modeling (online)",
                  "offline": "offline (whole clip)"}


def _data_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--layout", choices=LAYOUTS, default="llp", help="on-disk layout of --root")
    p.add_argument("--root", required=True, help="dataset folder, e.g. dataset/LLP")
    p.add_argument("--split-dir", help="folder of <split>_pd.csv files (default: <root>/data_info)")
    p.add_argument("--annotations", help="UnAV-100 annotation JSON (labels instead of label_clip_clap/)")
    p.add_argument("--no-teacher", action="store_true", help="ignore label/feature_label even if present")


def _store(a: argparse.Namespace, split: str) -> ClipStore:
    csv_path = Path(a.split_dir) / f"{split}_pd.csv" if a.split_dir else None
    return ClipStore(a.layout, a.root, split, csv_path=csv_path, use_teacher=not a.no_teacher,
                     annotation_json=a.annotations)


def _variants(text: str) -> list[str]:
    names = list(VARIANTS) if text == "all" else [v.strip() for v in text.split(",") if v.strip()]
    bad = [v for v in names if v not in VARIANTS]
    if bad or not names:
        raise ValueError(f"unknown variant(s) {bad or text!r}; choose from {', '.join(VARIANTS)} or all")
    return names


def train_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="foresight train prefm", description=__doc__.split("\n\n")[0])
    _data_args(p)
    p.add_argument("--train-split", default="train")
    p.add_argument("--val-split", default="val", help="validation split ('' to skip validation)")
    p.add_argument("--variant", default="prefm", help="prefm, nofuture, offline, a comma list, or all")
    p.add_argument("--preset", default="small", choices=["small", "paper_avvp", "paper_avel"])
    p.add_argument("--d-model", type=int)
    p.add_argument("--ff", type=int)
    p.add_argument("--layers", type=int)
    p.add_argument("--heads", type=int)
    p.add_argument("--positional", action="store_true",
                   help="add 'seconds ago' encodings to the window (our extension; the paper has none)")
    p.add_argument("--attention", choices=["plain", "fan"], default="plain",
                   help="fan: FANformer's Fourier pre-projection in the encoder's attention (our extension)")
    p.add_argument("--future-loss", choices=["bce", "selective"], default="bce",
                   help="selective: selective learning's masks on the future positions (our extension)")
    p.add_argument("--epochs", type=int, default=60)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--lr-min", type=float, default=5e-6)
    p.add_argument("--warmup", type=int, default=10, help="warm-up epochs")
    p.add_argument("--val-every", type=int, default=6)
    p.add_argument("--seed", type=int, default=87)
    p.add_argument("--no-distill", action="store_true", help="train without the teacher distillation loss")
    p.add_argument("--windows-per-clip", type=int, default=1,
                   help="random windows per clip per epoch (short clips give one window each otherwise)")
    p.add_argument("--select", choices=list(SELECT_KEYS), default="mean_evt_f1",
                   help="val score that keeps the checkpoint; audio_f1: mean per-class audio event F1 at tIoU 0.5 "
                        "pooled over val (an empty model scores 0)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--out", required=True, help="output folder for <variant>.pt")
    a = p.parse_args(argv)
    try:
        variants = _variants(a.variant)
        train_store = _store(a, a.train_split)
        val_store = _store(a, a.val_split) if a.val_split else None
        overrides = {k: v for k, v in {"d_model": a.d_model, "ff": a.ff, "layers": a.layers, "heads": a.heads}.items()
                     if v is not None}
        base = preset(a.preset, **overrides, positional=a.positional, attention=a.attention)
        train_store.clip(0)
    except (FileNotFoundError, ValueError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    torch.set_num_threads(a.threads)
    out = prepare_output(a.out, folder=True)  # before the training, not after it
    for variant in variants:
        tcfg = TrainConfig(variant=variant, epochs=a.epochs, batch_size=a.batch_size, lr=a.lr, lr_min=a.lr_min,
                           warmup_epochs=a.warmup, val_every=a.val_every, seed=a.seed, distill=not a.no_distill,
                           threads=a.threads, progress=not a.quiet,
                           future_loss=a.future_loss if variant == "prefm" else "bce",
                           windows_per_clip=a.windows_per_clip, select=a.select)
        try:
            result = train(base, train_store, val_store, tcfg, out / f"{variant}.pt")
        except (FileNotFoundError, ValueError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        title = "mean event F1" if a.select == "mean_evt_f1" else "audio F1@0.5 (pooled, mean of classes)"
        score = result.best_val.get(SELECT_KEYS[a.select])
        shown = f"val {title} {score:.2f}" if score is not None else "no validation"
        print(f"{variant}: {result.checkpoint} (epoch {result.best_epoch}, {shown}, {result.seconds:.0f} s)")
    return 0


TABLE_COLUMNS = (
    ("evt_f1_avg_audio", "EvF1 A"), ("evt_f1_avg_visual", "EvF1 V"), ("evt_f1_avg_av", "EvF1 AV"),
    ("seg_f1_audio", "SegF1 A"), ("seg_f1_visual", "SegF1 V"), ("seg_f1_av", "SegF1 AV"),
    ("map_audio", "mAP A"), ("map_visual", "mAP V"), ("map_av", "mAP AV"),
    ("type_av_seg", "Type@AV"), ("event_av_seg", "Event@AV"),
)


def format_table(results: dict[str, dict[str, float]]) -> str:
    cols = [(k, t) for k, t in TABLE_COLUMNS if any(k in r for r in results.values())]
    name_w = max(len("model"), *(len(VARIANT_TITLES.get(n, n)) for n in results))
    lines = ["model".ljust(name_w) + "".join(f" | {t:>8}" for _, t in cols)]
    lines.append("-" * len(lines[0]))
    for name, r in results.items():
        lines.append(VARIANT_TITLES.get(name, name).ljust(name_w) +
                     "".join(f" | {r[k]:8.2f}" if k in r else f" | {'-':>8}" for k, _ in cols))
    return "\n".join(lines)


def eval_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="foresight eval prefm", description=__doc__.split("\n\n")[0])
    _data_args(p)
    p.add_argument("--split", default="test", help="held-out split to score")
    p.add_argument("--checkpoints", help="folder with prefm.pt / nofuture.pt / offline.pt")
    p.add_argument("--checkpoint", action="append", default=[], help="a checkpoint file (repeatable)")
    p.add_argument("--json", action="store_true", help="print JSON instead of the table")
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    paths: dict[str, Path] = {}
    if a.checkpoints:
        folder = Path(a.checkpoints)
        if not folder.is_dir():
            print(f"error: checkpoint folder not found: {folder}", file=sys.stderr)
            return 2
        paths.update({v: folder / f"{v}.pt" for v in VARIANTS if (folder / f"{v}.pt").is_file()})
    for c in a.checkpoint:
        paths[Path(c).stem] = Path(c)
    if not paths:
        print("error: no checkpoints given or found (--checkpoints DIR or --checkpoint FILE)", file=sys.stderr)
        return 2
    try:
        store = _store(a, a.split)
        results = {name: evaluate_checkpoint(path, store) for name, path in paths.items()}
    except (FileNotFoundError, ValueError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(results, indent=2, sort_keys=True))
    else:
        print(f"{a.layout} {a.root} split={a.split} videos={len(store)} (percent; event F1 = mean over tIoU 0.1-0.9)")
        print(format_table(results))
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m training.prefm.cli {train,eval} ...``."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in ("train", "eval"):
        print("usage: python -m training.prefm.cli {train,eval} ...", file=sys.stderr)
        return 2
    return (train_main if argv[0] == "train" else eval_main)(argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())
