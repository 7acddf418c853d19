"""How far can any threshold rule on YAMNet's scores go on our real recordings? An upper bound (issue 11).

The default output's sound events come from YAMNet through the AudioSet->LLP map (`models/taxonomy.py`) and one
threshold; `llp_head` showed that no head fitted on one to three recordings per class beats that on recordings it
never heard. This asks the complementary question: what would the tag path score if, **for every class
separately**, the rule were chosen on the very clips it is scored on (an oracle, so the figure is an upper bound
for that data, not a result)? Per class, it tries

- the evidence: the map's score (the class's own and related AudioSet names, as shipped), its own name only, or
  the single YAMNet output among its 12 best-ranked for that class on these clips (ranked by the area under the
  ROC curve of its per-second score against the class's labelled seconds);
- a threshold from 0.02 to 0.9, hysteresis (stay on at half the threshold or not), a shortest event of 1, 2 or 3 s,

keeps the best pooled event F1 at tIoU 0.5, and reports the mean over classes with the false events per eventless
minute that the chosen rules make together; once with the evidence the shipped map allows (its names, or the own
name alone) and once with any YAMNet output. Read on train + val (every recording outside the test split); the
test split is never opened.

The same search is then run out of sample, as a method for `llp_head`'s splits: rules chosen per class on the
training side, scored on val and by grouped CV by source recording, next to the shipped tag path on the same folds.
The gap between the two says how much of the in-sample figure is the recordings' quirks.

    python -m training.experiments.tag_ceiling_v4 --corpus data/corpus_v4 --out docs/results/tag_ceiling_v4.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path

import numpy as np

from models.events import EventTracker
from models.prefm.labels import LLP_CLASSES
from models.prefm.metrics import extract_events, pooled_class_f1
from models.taxonomy import LLP_AUDIOSET, audioset_index, audioset_names
from training.perception.llp_head import (
    SCORED,
    Clip,
    Method,
    baseline,
    covered,
    evaluate,
    false_per_min,
    grouped_folds,
    load_clips,
    own_names,
)

THRESHOLDS = (0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
HYSTERESIS = (1.0, 0.5)  # "off" threshold as a fraction of "on"
SHORTEST = (1.0, 2.0, 3.0)
BEST_COLUMNS = 12


def auc(score: np.ndarray, positive: np.ndarray) -> float:
    """Area under the ROC curve of a per-second score against labelled seconds; 0.5 when one side is empty."""
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(positive, score)) if 0 < positive.sum() < len(positive) else 0.5


def evidences(clips: list[Clip], c: int, any_output: bool) -> dict[str, list[int]]:
    """Candidate evidence for class c: name -> the YAMNet outputs whose per-second maximum is the score."""
    out = {"map (shipped names)": own_names(c), "own name": [audioset_index()[LLP_AUDIOSET[LLP_CLASSES[c]]]]}
    if any_output:
        names = audioset_names()
        y = np.concatenate([cl.labels[:, c] for cl in clips]).astype(bool)
        allp = np.vstack([cl.probs for cl in clips])
        for j in sorted(range(allp.shape[1]), key=lambda j: -auc(allp[:, j], y))[:BEST_COLUMNS]:
            out.setdefault(f"YAMNet '{names[j]}'", [j])
    return out


def one_class_track(score: np.ndarray, on: float, off: float, shortest: float) -> np.ndarray:
    """(T,) 0/1 events of one class: causal hysteresis, then the live `EventTracker` (one-second gaps filled,
    events shorter than `shortest` dropped), as `llp_head.tracked` does for many classes at once, without its
    per-second bookkeeping over all 25, which made the search slow (tested equal)."""
    tracker = EventTracker(max_gap=1, min_duration=shortest)
    active = False
    for t, v in enumerate(score):
        active = bool(v >= on or (active and v >= off))
        tracker.update(float(t), float(t + 1), {("class", "audio"): float(v)} if active else {})
    tracker.finish()
    out = np.zeros(len(score), np.int64)
    for e in tracker.closed:
        out[int(e.start):int(np.ceil(e.end))] = 1
    return out


def rule_predictions(scores: list[np.ndarray], on: float, off: float, shortest: float) -> list[np.ndarray]:
    """(T, 1) predictions of one class per clip under one rule."""
    return [one_class_track(s, on, off, shortest)[:, None] for s in scores]


def oracle_class(clips: list[Clip], c: int, any_output: bool) -> tuple[dict, list[np.ndarray]]:
    """The best rule for class c on these clips (its pooled F1 and settings) and that rule's predictions."""
    gts = [cl.labels[:, [c]] for cl in clips]
    best: dict = {"f1": -1.0}
    top = -1.0  # unrounded, so that a tie keeps the first rule
    chosen: list[np.ndarray] = []
    for name, columns in evidences(clips, c, any_output).items():
        scores = [cl.probs[:, columns].max(1) for cl in clips]
        for on, frac, shortest in itertools.product(THRESHOLDS, HYSTERESIS, SHORTEST):
            preds = rule_predictions(scores, on, on * frac, shortest)
            f1 = pooled_class_f1(preds, gts, 5).get(0, 0.0)
            if f1 > top + 1e-9:
                top = f1
                best = {"f1": round(f1, 3), "evidence": name, "on": on, "off": round(on * frac, 3),
                        "shortest_s": shortest, "_columns": columns}
                chosen = preds
    best["events"] = sum(len(extract_events(g[:, 0])) for g in gts)
    best["columns"] = best.pop("_columns", [])
    return best, chosen


def ceiling(clips: list[Clip], any_output: bool) -> dict:
    """Per class, the oracle rule; the mean F1 over the classes with a labelled event and the false events per
    eventless minute of all chosen rules together."""
    present = [c for c in SCORED if any(cl.labels[:, c].any() for cl in clips)]
    rows = {}
    together = [np.zeros((len(cl.labels), len(LLP_CLASSES)), np.int64) for cl in clips]
    for c in present:
        rows[LLP_CLASSES[c]], preds = oracle_class(clips, c, any_output)
        for t, p in zip(together, preds, strict=True):
            t[:, c] = p[:, 0]
        r = rows[LLP_CLASSES[c]]
        print(f"{LLP_CLASSES[c]:24s} oracle F1 {r['f1']:.3f}  ({r['evidence']}, on {r['on']}, off {r['off']}, "
              f">= {r['shortest_s']} s; {r['events']} events)", flush=True)
    return {"classes": len(rows), "mean_f1": round(float(np.mean([r["f1"] for r in rows.values()])), 3),
            "false_events_per_min": round(false_per_min(together, [cl.labels for cl in clips]), 2), "per_class": rows}


def per_class_rules(any_output: bool = False) -> Method:
    """The ceiling's search as a method for `llp_head`'s splits: per class, the rule that scores best on the
    training side, applied unchanged to the held-out side (so its figure is out of sample)."""
    def method(train: list[Clip]):
        rules = {c: oracle_class(train, c, any_output)[0] for c in covered(train)}

        def predict(clip: Clip) -> np.ndarray:
            pred = np.zeros((len(clip.labels), len(LLP_CLASSES)), np.int64)
            for c, r in rules.items():
                score = clip.probs[:, r["columns"]].max(1)
                pred[:, c] = one_class_track(score, r["on"], r["off"], r["shortest_s"])
            return pred
        return set(rules), predict
    return method


def cross_validated(clips: list[Clip], folds: int = 3, repeats: int = 3) -> dict:
    """Per-class rules chosen on the training side against the shipped tag path: val (train -> val) and the
    grouped CV by source recording of `llp_head` (same fold draws, seeds 0..repeats-1)."""
    val = [([c for c in clips if c.split == "train"], [c for c in clips if c.split == "val"])]
    cv = [grouped_folds(clips, folds, s) for s in range(repeats)]
    out = {}
    for name, method in (("tag path (shipped)", baseline()), ("per-class rules, map evidence", per_class_rules()),
                         ("per-class rules, any YAMNet output", per_class_rules(any_output=True))):
        out[name] = evaluate(method, val, cv)
        r = out[name]
        print(f"{name:40s} val {r['val']:.3f} ({r['val_false_per_min']:.2f}/min)  cv {r['cv']:.3f} ± {r['cv_sd']:.3f} "
              f"({r['cv_false_per_min']:.2f}/min)", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", type=Path, default=Path("data/corpus_v4"))
    p.add_argument("--out", type=Path, default=Path("docs/results/tag_ceiling_v4.json"))
    a = p.parse_args(argv)
    if not (a.corpus / "corpus.json").is_file():
        p.error(f"no corpus at {a.corpus} (build it: foresight train corpus --version 4 --out {a.corpus})")
    t0 = time.perf_counter()
    clips = load_clips(a.corpus)
    report = {"corpus": str(a.corpus), "splits": ["train", "val"], "clips": len(clips),
              "map_evidence": ceiling(clips, any_output=False), "any_yamnet_output": ceiling(clips, any_output=True),
              "out_of_sample": cross_validated(clips)}
    report["seconds"] = round(time.perf_counter() - t0)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(report, indent=1) + "\n")
    for key in ("map_evidence", "any_yamnet_output"):
        r = report[key]
        print(f"{key}: mean F1 {r['mean_f1']:.3f} over {r['classes']} classes, "
              f"{r['false_events_per_min']:.2f} false events / eventless min")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
