"""PreFM on corpus v3/v4 (real recordings): train the variants, select on val, score test once, write result JSON.

    python -m training.experiments.prefm_v3 train --corpus data/corpus_v3 --runs data/corpus_v3_runs --seed 0
    python -m training.experiments.prefm_v3 score --corpus data/corpus_v3 --runs data/corpus_v3_runs \
        --seeds 0 --out docs/results/prefm_v3.json

Variants (all PreFM small with recency encodings, the shipped recipe): `full` (every input, YAMNet teacher),
`noshortcut` (colour histogram and thumbnail dropped, teacher), `noshortcut_nodistill` (dropped, no teacher),
and the ablations `nofuture` and `offline` (dropped, teacher). Checkpoints are the best validation epoch; test
is scored once per checkpoint. The shipped checkpoint is scored on the same test split as the "before" row.
`--windows-per-clip N --select audio_f1` (issue 11's fixes, `trainer.TrainConfig`): N random windows per clip
per epoch, and the checkpoint with the best pooled per-class audio event F1 at tIoU 0.5 on val.

Measures, on the test split (recordings no training clip used):
- per-class audio (and visual) event F1 at tIoU 0.5, events pooled over all test clips, for every class with at
  least one true test event; the mean over those classes;
- false events per minute on the eventless test clips (no target sound and no target picture): every predicted
  audio or visual event there is false;
- the repository's own summary (`trainer.evaluate`: mean event F1 over tIoU 0.1-0.9) for continuity.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "models" / "prefm" / "checkpoints" / "embedded_llp.pt"
SHORTCUT_DIMS = 40  # colour histogram (3 x 8) + 4 x 4 thumbnail, the last dims of the embedded visual vector
RECIPE = dict(epochs=300, batch_size=32, lr=5e-4, lr_min=5e-6, warmup_epochs=20, val_every=10)
VARIANTS: dict[str, dict] = {
    "full": {"variant": "prefm", "keep": False, "distill": True},
    "noshortcut": {"variant": "prefm", "keep": True, "distill": True},
    "noshortcut_nodistill": {"variant": "prefm", "keep": True, "distill": False},
    "nofuture": {"variant": "nofuture", "keep": True, "distill": True},
    "offline": {"variant": "offline", "keep": True, "distill": True},
}


def split_dir(corpus: Path, encoded_only: bool) -> Path:
    """Where the split CSVs are: the corpus's own, or `data_info_encoded/` (see `prepare_encoded`)."""
    return corpus / ("data_info_encoded" if encoded_only else "data_info")


def prepare_encoded(corpus: Path, progress: bool = True) -> dict[str, int]:
    """Split CSVs over the clips encoded so far (`data_info_encoded/`), and their YAMNet teacher files.

    Lets experiments start while `foresight train corpus` is still encoding; the clips are encoded in id order
    and the splits were drawn by a random permutation of ids, so a prefix keeps the split proportions."""
    import csv

    from training.corpus.teacher import write_teachers

    lengths = {p.stem: int(np.load(p, mmap_mode="r").shape[0]) for p in (corpus / "embedded" / "audio").glob("*.npy")
               if (corpus / "embedded" / "visual" / p.name).is_file()}
    write_teachers(corpus, lengths, progress)
    out = split_dir(corpus, True)
    out.mkdir(exist_ok=True)
    counts = {}
    for split in ("train", "val", "test"):
        rows = [(cid, lengths[cid]) for cid, _ in _csv_rows(corpus / "data_info" / f"{split}_pd.csv") if cid in lengths]
        with (out / f"{split}_pd.csv").open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["filename", "length"])
            w.writerows(rows)
        counts[split] = len(rows)
    return counts


def _csv_rows(path: Path) -> list[tuple[str, int]]:
    from training.prefm.data import read_split_csv

    return read_split_csv(path)


def _store(corpus: Path, split: str, encoded_only: bool, use_teacher: bool = True):  # noqa: ANN202 - ClipStore
    from training.prefm.data import ClipStore

    return ClipStore("embedded", corpus, split, csv_path=split_dir(corpus, encoded_only) / f"{split}_pd.csv",
                     use_teacher=use_teacher)


def train_all(corpus: Path, runs: Path, seed: int, only: list[str] | None = None, epochs: int | None = None,
              encoded_only: bool = False, warmup: int | None = None, val_every: int | None = None,
              windows_per_clip: int = 1, select: str = "mean_evt_f1", batch_size: int | None = None,
              lr: float | None = None) -> dict:
    import torch

    from models.prefm.modeling_prefm import preset
    from training.prefm.trainer import TrainConfig, train

    torch.set_num_threads(1)
    tr, va = _store(corpus, "train", encoded_only), _store(corpus, "val", encoded_only)
    visual_dim = int(tr.dims()["visual_dim"])
    log = {}
    for name, spec in VARIANTS.items():
        if only and name not in only:
            continue
        base = preset("small", positional=True, visual_keep=visual_dim - SHORTCUT_DIMS if spec["keep"] else None)
        short = {"epochs": epochs, "warmup_epochs": warmup, "val_every": val_every, "batch_size": batch_size, "lr": lr}
        recipe = {**RECIPE, **{k: v for k, v in short.items() if v}}
        tcfg = TrainConfig(variant=spec["variant"], seed=seed, distill=spec["distill"], progress=False,
                           windows_per_clip=windows_per_clip, select=select, **recipe)
        t0 = time.time()
        res = train(base, tr, va, tcfg, runs / f"seed{seed}" / f"{name}.pt")
        log[name] = {"best_epoch": res.best_epoch, "val_mean_evt_f1": round(res.best_val.get("mean_evt_f1", -1), 2),
                     "val_audio_f1_05": round(res.best_val.get("audio_f1_05", -1), 2), "select": select,
                     "windows_per_clip": windows_per_clip, "recipe": recipe, "train_s": round(time.time() - t0, 1),
                     "history": [{k: round(v, 4) for k, v in r.items()} for r in res.history if "val_mean_evt_f1" in r]}
        # one file per variant as well: variants trained by parallel processes would race on the shared log
        (runs / f"seed{seed}" / f"train_log_{name}.json").write_text(json.dumps(log[name], indent=1))
        print(name, {k: v for k, v in log[name].items() if k != "history"}, flush=True)
    path = runs / f"seed{seed}" / "train_log.json"
    old = json.loads(path.read_text()) if path.is_file() else {}
    path.write_text(json.dumps({**old, **log}, indent=1))
    return log


def eventless_ids(corpus: Path, split: str) -> set[str]:
    """Clips of `split` with no target event in either modality (the negatives)."""
    out = set()
    for path in (corpus / "truth").glob("*.json"):
        t = json.loads(path.read_text())
        if t["split"] == split and not any(a["llp"] for a in t["audio"]) and not any(s["llp"] for s in t["shots"]):
            out.add(t["clip_id"])
    return out


def score_checkpoint(path: Path, corpus: Path, split: str = "test", encoded_only: bool = False) -> dict:
    """Per-class event F1 at tIoU 0.5, false events per minute on eventless clips, and the usual summary."""
    from models.prefm.labels import LLP_CLASSES
    from models.prefm.metrics import event_counts, extract_events, summarize, video_metrics
    from models.prefm.online import load_checkpoint
    from training.prefm.trainer import predict_clip

    model, _, meta = load_checkpoint(path)
    model.eval()
    variant = str(meta.get("variant", "prefm"))
    store = _store(corpus, split, encoded_only, use_teacher=False)
    negatives = eventless_ids(corpus, split)
    counts = {m: np.zeros((3, len(LLP_CLASSES)), np.int64) for m in ("audio", "visual")}
    false_events = {"audio": 0, "visual": 0}
    neg_seconds, neg_clips = 0, 0
    per_video = []
    for i in range(len(store)):
        clip = store.clip(i)
        probs = predict_clip(model, clip, variant)
        per_video.append(video_metrics(probs, clip.labels))
        for m in ("audio", "visual"):
            pred = (probs[m][: clip.length] >= 0.5).astype(np.int64)
            counts[m] += np.stack(event_counts(pred, clip.labels[m].astype(np.int64), 5))
            if clip.name in negatives:
                false_events[m] += sum(len(extract_events(pred[:, c])) for c in range(pred.shape[1]))
        if clip.name in negatives:
            neg_seconds, neg_clips = neg_seconds + clip.length, neg_clips + 1
    out: dict = {"checkpoint": str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path),
                 "variant": variant, "val": meta.get("val", {}).get("mean_evt_f1"),
                 "val_audio_f1_05": meta.get("val", {}).get("audio_f1_05"), "epoch": meta.get("epoch")}
    for m in ("audio", "visual"):
        tp, fp, fn = counts[m]
        per = {LLP_CLASSES[c]: round(float(2 * tp[c] / (2 * tp[c] + fp[c] + fn[c])), 3)
               for c in range(len(LLP_CLASSES)) if tp[c] + fn[c] > 0}
        out[f"{m}_f1_tiou05_per_class"] = per
        out[f"{m}_f1_tiou05_mean"] = round(float(np.mean(list(per.values()))), 3) if per else None
        out[f"{m}_false_events_on_absent_classes"] = {LLP_CLASSES[c]: int(fp[c]) for c in range(len(LLP_CLASSES))
                                                      if tp[c] + fn[c] == 0 and fp[c] > 0}
    minutes = neg_seconds / 60.0
    out["eventless"] = {"clips": neg_clips, "minutes": round(minutes, 2),
                        "audio_false_events_per_min": round(false_events["audio"] / max(minutes, 1e-9), 2),
                        "visual_false_events_per_min": round(false_events["visual"] / max(minutes, 1e-9), 2),
                        "false_events_per_min": round(sum(false_events.values()) / max(minutes, 1e-9), 2)}
    summary = summarize(per_video)  # what `trainer.evaluate` reports, from the same predictions
    out["summary"] = {k: round(v, 2) for k, v in summary.items() if k in ("evt_f1_avg_audio", "evt_f1_avg_visual",
                                                                        "evt_f1_avg_av", "mean_evt_f1")}
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m training.experiments.prefm_v3", description=__doc__.split("\n\n")[0])
    p.add_argument("command", choices=["prepare", "train", "score"])
    p.add_argument("--corpus", default="data/corpus_v3")
    p.add_argument("--runs", default="data/corpus_v3_runs")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--seeds", default="0", help="score: comma list of trained seeds")
    p.add_argument("--only", help="comma list of variants")
    p.add_argument("--epochs", type=int, help="train: override the recipe's 300 epochs (a shorter schedule)")
    p.add_argument("--warmup", type=int, help="train: override the recipe's 20 warm-up epochs")
    p.add_argument("--val-every", type=int, help="train: override the recipe's validation every 10 epochs")
    p.add_argument("--batch-size", type=int, help="train: override the recipe's batch of 32")
    p.add_argument("--lr", type=float, help="train: override the recipe's peak learning rate 5e-4")
    p.add_argument("--windows-per-clip", type=int, default=1, help="train: random windows per clip per epoch")
    p.add_argument("--select", choices=["mean_evt_f1", "audio_f1"], default="mean_evt_f1",
                   help="train: val score that keeps the checkpoint (audio_f1: pooled per-class audio F1 at tIoU 0.5)")
    p.add_argument("--split", default="test")
    p.add_argument("--out", help="score: result JSON path")
    p.add_argument("--no-shipped", action="store_true", help="score: leave out the shipped checkpoint")
    p.add_argument("--encoded-only", action="store_true",
                   help="use data_info_encoded/ (the clips encoded so far, written by `prepare`)")
    a = p.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    corpus, runs = Path(a.corpus), Path(a.runs)
    if a.command == "prepare":
        print(prepare_encoded(corpus))
        return 0
    if not (split_dir(corpus, a.encoded_only) / "train_pd.csv").is_file():
        print(f"error: no encoded corpus at {corpus}", file=sys.stderr)
        return 2
    only = [v for v in (a.only or "").split(",") if v] or None
    if a.command == "train":
        train_all(corpus, runs, a.seed, only, a.epochs, a.encoded_only, a.warmup, a.val_every, a.windows_per_clip,
                  a.select, a.batch_size, a.lr)
        return 0
    results: dict = {"split": a.split, "encoded_only": a.encoded_only}
    if not a.no_shipped:
        results["shipped_before"] = score_checkpoint(SHIPPED, corpus, a.split, a.encoded_only)
    for seed in [int(s) for s in a.seeds.split(",")]:
        for name in VARIANTS:
            ckpt = runs / f"seed{seed}" / f"{name}.pt"
            if ckpt.is_file() and (not only or name in only):
                results[f"{name}_seed{seed}"] = score_checkpoint(ckpt, corpus, a.split, a.encoded_only)
    text = json.dumps(results, indent=1)
    if a.out:
        Path(a.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
