"""Choose the tag-event thresholds of the default output on real recordings (corpus v3), not by hand.

The union output (`pipelines/stages/union.py`) reports AudioSet tag events for every class PreFM was not
trained on, so the tag threshold, the tags kept per second and the shortest event decide what a user sees on
real footage: too strict and applause is missed, too loose and a phone ring becomes "Dog". This replays the
live tag path (`tag_labels` then `EventTracker`) over the stored YAMNet scores of corpus v3 and scores each
setting against the recordings' LLP labels: event F1 at tIoU 0.5 per class (a tag counts for an LLP class
when it is the class's AudioSet name or a related name) and false events per minute on eventless clips.

The taggers were never trained on our corpus, so the calibration reads every clip outside the test split
(train and val). The chosen setting is scored once on test. The setting is for the YAMNet model that scored the
corpus (float or w8a8, read from its manifest; `pipelines.stages.config.TAG_SETTINGS` holds one per model).

    python -m training.corpus.calibrate_tags --corpus data/corpus_v3 --out docs/results/tag_calibration.json
    python -m training.corpus.calibrate_tags --corpus CORPUS --score-test shipped   # test: the shipped setting only
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

import numpy as np

from models.audio.tags import top_tags
from models.events import EventTracker
from models.prefm.labels import LLP_CLASSES
from models.prefm.metrics import event_counts
from models.taxonomy import audioset_names
from pipelines.stages.audio import TAGS_HANDED_ON
from pipelines.stages.config import TAG_SETTINGS, StageConfig
from pipelines.stages.parser import tag_labels
from training.corpus.layout import corpus_yamnet, load_truths
from training.perception.report import tag_classes

THRESHOLDS = (0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7)  # float YAMNet's scores are continuous
TOP_K = (1, 2, 3)
MIN_SECONDS = (1.0, 2.0)
SCORED = [c for c in LLP_CLASSES if c != "Speech"]  # speech events come from the VAD, not from tags


def class_names_of_tag() -> dict[str, list[int]]:
    """AudioSet name -> the scored LLP classes (indices into LLP_CLASSES) it is evidence for."""
    speech = LLP_CLASSES.index("Speech")
    return {name: [c for c in classes if c != speech] for name, classes in tag_classes().items()}


def tag_events(probs: np.ndarray, config: StageConfig, min_s: float) -> list:
    """The live tag path over one clip's per-second AudioSet probabilities (T, 521)."""
    names = audioset_names()
    tracker = EventTracker(max_gap=1, min_duration=min_s)
    for t, row in enumerate(probs):
        tags = top_tags(row, names, **TAGS_HANDED_ON)
        audio = {k: v for k, v in tag_labels(config, tags, None).items() if k[1] == "audio"}
        tracker.update(float(t), float(t + 1), audio)
    tracker.finish()
    return tracker.closed


def predictions(events: list, seconds: int, table: dict[str, list[int]]) -> np.ndarray:
    """(T, 25) LLP predictions from tag events."""
    pred = np.zeros((seconds, len(LLP_CLASSES)), np.int64)
    for e in events:
        for c in table.get(e.label, ()):
            pred[int(e.start):int(np.ceil(e.end)), c] = 1
    return pred


def load_clips(corpus: Path, splits: tuple[str, ...]) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(clip id, YAMNet probabilities, audio labels) of the clips in `splits`."""
    clips = []
    for truth in load_truths(corpus):
        if truth.split in splits:
            audio = np.load(corpus / "embedded" / "audio" / f"{truth.clip_id}.npy")
            labels = np.load(corpus / "label" / "label" / "audio" / f"{truth.clip_id}.npy")
            n = min(len(labels), len(audio))
            clips.append((truth.clip_id, audio[:n, :521], labels[:n]))
    return clips


def score(clips: list, config: StageConfig, min_s: float) -> dict:
    """Mean per-class event F1 at tIoU 0.5 over the scored classes present, per-class F1, false events/min."""
    table = class_names_of_tag()
    scored = [LLP_CLASSES.index(c) for c in SCORED]
    tp, fp, fn = (np.zeros(len(LLP_CLASSES), np.int64) for _ in range(3))
    false_events, eventless_s = 0, 0
    for _, probs, labels in clips:
        pred = predictions(tag_events(probs, config, min_s), len(labels), table)
        gt = labels.copy()
        gt[:, LLP_CLASSES.index("Speech")] = 0
        a, b, c = event_counts(pred, gt, 5)
        tp, fp, fn = tp + a, fp + b, fn + c
        if not gt.any():
            eventless_s += len(labels)
            false_events += int(b.sum())
    present = [c for c in scored if tp[c] + fn[c] > 0]
    f1 = {LLP_CLASSES[c]: round(float(2 * tp[c] / max(1, 2 * tp[c] + fp[c] + fn[c])), 3) for c in present}
    return {"mean_f1": round(float(np.mean(list(f1.values()))) if f1 else 0.0, 4), "per_class_f1": f1,
            "false_events_per_min": round(60.0 * false_events / max(1, eventless_s), 2),
            "false_events": int(fp[scored].sum())}


def calibrate(corpus: Path, splits: tuple[str, ...] = ("train", "val")) -> dict:
    """Every setting on `splits`; the best mean F1 with fewer than 1 false event per eventless minute."""
    if "test" in splits:
        raise ValueError("the test split is scored, never calibrated on")
    model = corpus_yamnet(corpus)
    calib = load_clips(corpus, splits)
    rows = []
    for thr, k, min_s in itertools.product(THRESHOLDS, TOP_K, MIN_SECONDS):
        config = StageConfig(yamnet=model, tag_threshold=thr, tag_top_k=k)
        rows.append({"tag_threshold": thr, "tag_top_k": k, "tag_min_s": min_s, **score(calib, config, min_s)})
    allowed = [r for r in rows if r["false_events_per_min"] < 1.0] or rows
    best = max(allowed, key=lambda r: (r["mean_f1"], -r["false_events_per_min"]))
    return {"yamnet": model, "calibration_split": list(splits), "clips": len(calib), "grid": rows,
            "chosen": best}


def setting_config(model: str, setting: tuple) -> tuple[StageConfig, float]:
    """The parser options and shortest event of a (threshold, top k, shortest event) setting."""
    threshold, top_k, min_s = setting
    return StageConfig(yamnet=model, tag_threshold=threshold, tag_top_k=top_k), min_s


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", type=Path, default=Path("data/corpus_v3"))
    p.add_argument("--out", type=Path, default=Path("docs/results/tag_calibration.json"))
    p.add_argument("--score-test", nargs="?", const="both", choices=("chosen", "shipped", "both"),
                   help="also score on test the chosen setting, the shipped one for this corpus's YAMNet "
                        "(TAG_SETTINGS), or both (the default when given without a value)")
    p.add_argument("--splits", default="train,val", help="the splits calibrated on (default: all but test)")
    args = p.parse_args(argv)
    if not (args.corpus / "corpus.json").is_file():
        p.error(f"no corpus at {args.corpus} (build it: foresight train corpus --version 3 --out {args.corpus})")
    splits = tuple(s.strip() for s in args.splits.split(",") if s.strip())
    if not splits or set(splits) - {"train", "val"}:
        p.error("--splits takes train and/or val (the test split is only scored)")
    report = calibrate(args.corpus, splits)
    if args.score_test:
        test, model, chosen = load_clips(args.corpus, ("test",)), report["yamnet"], report["chosen"]
        settings = {}
        if args.score_test in ("chosen", "both"):
            settings["chosen"] = (chosen["tag_threshold"], chosen["tag_top_k"], chosen["tag_min_s"])
        if args.score_test in ("shipped", "both"):
            settings["shipped " + "/".join(map(str, TAG_SETTINGS[model]))] = TAG_SETTINGS[model]
        report["test"] = {name: {"setting": list(s), **score(test, *setting_config(model, s))}
                          for name, s in settings.items()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({"chosen": report["chosen"], "test": report.get("test")}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
