"""Would a learned per-second LLP head over YAMNet's outputs beat the hand-written AudioSet->LLP map? (issue 11)

The default output's sound events for classes PreFM does not cover come from the YAMNet tagger through the
hand-written map of `models/taxonomy.py` and one global threshold, top-k and shortest event
(`docs/results/tag_calibration.json`). This experiment fits the alternatives on corpus-v4 recordings and asks
whether any of them generalises better to recordings it never heard:

- the map with another global threshold (hysteresis, 1 or 2 s shortest event), or per-class thresholds;
- logistic regression one-vs-rest (scikit-learn) on YAMNet's 521 scores (as logits), on its 1024-d embedding
  (the corpus's teacher files), on both the scores and the map's 25 class scores, or per class on the logits
  of that class's own map names only; causal hysteresis, one-second gap filling and a shortest event after it;
- the head averaged with the map's score, and the head's events added to the tag path's (hybrid).

Two measures, both on non-Speech classes (Speech comes from PreFM in the default output): **val** (fitted on
train, scored on val) and **grouped CV by source recording over train + val** (3 folds, repeated; the source
recordings of every labelled class are dealt round-robin to folds; a clip is scored in fold k when all its
labelled recordings are in fold k and trains fold k when none is; background and distractor recordings may
feed both sides). A class is scored in a fold only when its training side holds it (otherwise no head could
know it), which leaves the 7 classes with at least 2 recordings in train + val; the `all classes` rows score
all 16 with the tag path standing in. The test split is never read. Figures: mean pooled per-class event F1 at
tIoU 0.5, and false events per eventless minute. Outcome on v4: no variant clearly beat the tag path, so none
is shipped (`docs/perception.md`).

    nice -n 15 python -m training.perception.llp_head --corpus data/corpus_v4 --out docs/results/llp_head_v4.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models.events import EventTracker
from models.prefm.labels import LLP_CLASSES
from models.prefm.metrics import extract_events, pooled_class_f1
from models.taxonomy import audioset_index, heard_as
from pipelines.stages.config import StageConfig
from training.corpus.calibrate_tags import class_names_of_tag, predictions, tag_events
from training.corpus.layout import check_corpus_yamnet, load_truths

SPEECH = LLP_CLASSES.index("Speech")
SCORED = [c for c in range(len(LLP_CLASSES)) if c != SPEECH]
GENERIC = {"Music"}  # a parent of every instrument: evidence for no single class (as in the report)


@dataclass
class Clip:
    id: str
    split: str
    probs: np.ndarray  # (T, 521) YAMNet scores
    embedding: np.ndarray  # (T, 1024) YAMNet embedding
    labels: np.ndarray  # (T, 25) audio labels, Speech zeroed
    labelled: dict[str, str]  # source recording -> its LLP class (non-Speech)


def load_clips(corpus: Path) -> list[Clip]:
    """Train and val clips only: the test split is not opened."""
    clips = []
    for t in load_truths(corpus):
        if t.split not in ("train", "val"):
            continue
        a = np.load(corpus / "embedded" / "audio" / f"{t.clip_id}.npy")
        e = np.load(corpus / "label" / "feature_label" / "audio" / f"{t.clip_id}.npy")
        y = np.load(corpus / "label" / "label" / "audio" / f"{t.clip_id}.npy")
        n = min(len(a), len(e), len(y))
        y = y[:n].copy()
        y[:, SPEECH] = 0
        clips.append(Clip(t.clip_id, t.split, a[:n, :521], e[:n], y,
                          {s.name: s.llp for s in t.audio if s.llp and s.llp != "Speech"}))
    return clips


Split = list[tuple[list[Clip], list[Clip]]]  # (train, eval) per fold


def grouped_folds(clips: list[Clip], k: int, seed: int) -> Split:
    """Folds by source recording: a clip is evaluated in fold f when all its labelled recordings are in f (an
    eventless clip draws a fold) and trains every fold none of them is in."""
    rng = np.random.default_rng(seed)
    by_class: dict[str, set[str]] = {}
    for c in clips:
        for source, llp in c.labelled.items():
            by_class.setdefault(llp, set()).add(source)
    fold_of: dict[str, int] = {}
    for llp in sorted(by_class):
        sources = sorted(by_class[llp])
        rng.shuffle(sources)
        offset = rng.integers(k)
        for i, s in enumerate(sources):
            fold_of.setdefault(s, int((offset + i) % k))
    folds_of = [{fold_of[s] for s in c.labelled} or None for c in clips]
    drawn: dict[str, int] = {}
    out = []
    for f in range(k):
        train, held = [], []
        for c, fs in zip(clips, folds_of, strict=True):
            if fs is None:
                if c.id not in drawn:
                    drawn[c.id] = int(rng.integers(k))
                fs = {drawn[c.id]}
            if fs == {f}:
                held.append(c)
            if f not in fs:
                train.append(c)
        out.append((train, held))
    return out


def tracked(scores: np.ndarray, on: float, off: float, min_s: float, classes: set[int]) -> np.ndarray:
    """(T, 25) predictions: a class opens at `on`, stays while at `off` (causal hysteresis), then the live
    `EventTracker` fills one-second gaps and drops events shorter than `min_s`."""
    tracker = EventTracker(max_gap=1, min_duration=min_s)
    allowed = np.zeros(len(LLP_CLASSES), bool)
    allowed[list(classes)] = True
    active = np.zeros(len(LLP_CLASSES), bool)
    for t, row in enumerate(scores):
        active = allowed & ((row >= on) | (active & (row >= off)))
        tracker.update(float(t), float(t + 1), {(LLP_CLASSES[c], "audio"): float(row[c]) for c in np.flatnonzero(active)})
    tracker.finish()
    pred = np.zeros((len(scores), len(LLP_CLASSES)), np.int64)
    for e in tracker.closed:
        pred[int(e.start):int(np.ceil(e.end)), LLP_CLASSES.index(e.label)] = 1
    return pred


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-4, 1 - 1e-4)
    return np.log(p / (1 - p))


def own_names(c: int) -> list[int]:
    """YAMNet indices of class c's map names (its own and related, less `GENERIC`)."""
    idx = audioset_index()
    return [idx[n] for n in sorted(heard_as(LLP_CLASSES[c]) - GENERIC)]


def mapped_scores(probs: np.ndarray) -> np.ndarray:
    """(T, 25): per class, the highest score among its map names: the hand map's evidence."""
    out = np.zeros((len(probs), len(LLP_CLASSES)), np.float32)
    for c in range(len(LLP_CLASSES)):
        out[:, c] = probs[:, own_names(c)].max(1)
    return out


def features(clip: Clip, kind: str) -> np.ndarray:
    if kind == "p521":
        return _logit(clip.probs)
    if kind == "emb":
        return clip.embedding
    if kind == "p521+map":
        return np.hstack([_logit(clip.probs), _logit(mapped_scores(clip.probs))])
    raise ValueError(kind)


class Head:
    """One-vs-rest logistic regression per class with a positive second in training; `kind` "own" fits each
    class on the logits of its own map names only."""

    def __init__(self, train: list[Clip], kind: str, C: float, balanced: bool = True):
        from sklearn.linear_model import LogisticRegression
        from sklearn.preprocessing import StandardScaler

        self.kind = kind
        y = np.vstack([c.labels for c in train])
        x = np.vstack([_logit(c.probs) if kind == "own" else features(c, kind) for c in train])
        self.scaler = None if kind == "own" else StandardScaler().fit(x)
        xs = x if self.scaler is None else self.scaler.transform(x)
        weight = "balanced" if balanced else None
        self.models = {c: LogisticRegression(C=C, class_weight=weight, max_iter=2000).fit(
                           xs[:, own_names(c)] if kind == "own" else xs, y[:, c])
                       for c in SCORED if y[:, c].any()}

    def probs(self, clip: Clip) -> np.ndarray:
        x = _logit(clip.probs) if self.kind == "own" else self.scaler.transform(features(clip, self.kind))
        out = np.zeros((len(x), len(LLP_CLASSES)), np.float32)
        for c, m in self.models.items():
            out[:, c] = m.predict_proba(x[:, own_names(c)] if self.kind == "own" else x)[:, 1]
        return out


Method = Callable[[list[Clip]], tuple[set[int], Callable[[Clip], np.ndarray]]]
_HEADS: dict[tuple, Head] = {}
_PROBS: dict[tuple, np.ndarray] = {}


def _head(train: list[Clip], kind: str, C: float, balanced: bool = True) -> tuple[tuple, Head]:
    key = (kind, C, balanced, tuple(c.id for c in train))
    if key not in _HEADS:
        _HEADS[key] = Head(train, kind, C, balanced)
    return key, _HEADS[key]


def _head_probs(key: tuple, head: Head, clip: Clip) -> np.ndarray:
    if (key, clip.id) not in _PROBS:
        _PROBS[(key, clip.id)] = head.probs(clip)
    return _PROBS[(key, clip.id)]


def covered(train: list[Clip]) -> set[int]:
    y = np.vstack([c.labels for c in train])
    return {c for c in SCORED if y[:, c].any()}


def tag_path(clip: Clip, dropped: set[int] = frozenset()) -> np.ndarray:
    """The shipped tag path (`StageConfig` defaults); tags named for a `dropped` class are suppressed, as the
    union suppresses the names of the classes another model speaks for."""
    config = StageConfig()
    names = set().union(*(heard_as(LLP_CLASSES[c]) for c in dropped))
    events = [e for e in tag_events(clip.probs, config, config.tag_min_s) if e.label not in names]
    return predictions(events, len(clip.labels), class_names_of_tag())


def baseline() -> Method:
    return lambda train: (covered(train), tag_path)


def map_threshold(on: float, min_s: float) -> Method:
    return lambda train: (covered(train), lambda c: tracked(mapped_scores(c.probs), on, on, min_s, set(SCORED)))


def class_thresholds(train: list[Clip], min_s: float = 2.0,
                     grid: tuple[float, ...] = (0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7)) -> np.ndarray:
    """Per class, the map threshold with the best pooled event F1 on `train` (first best; 0.35 without data)."""
    scores = [mapped_scores(c.probs) for c in train]
    out = np.full(len(LLP_CLASSES), 0.35, np.float32)
    for c in covered(train):
        best = -1.0
        for g in grid:
            preds = [tracked(s, g, g, min_s, {c})[:, [c]] for s in scores]
            f1 = pooled_class_f1(preds, [clip.labels[:, [c]] for clip in train], 5).get(0, 0.0)
            if f1 > best + 1e-9:
                best, out[c] = f1, g
    return out


def map_class_thresholds(min_s: float = 2.0) -> Method:
    def method(train):
        th = np.maximum(class_thresholds(train, min_s), 1e-3)
        return covered(train), lambda c: tracked(mapped_scores(c.probs) / th, 1.0, 1.0, min_s, set(SCORED))
    return method


def head(kind: str, C: float, on: float, off: float, min_s: float, hybrid: bool = False,
         balanced: bool = True) -> Method:
    def method(train):
        key, h = _head(train, kind, C, balanced)
        cov = set(h.models)

        def predict(c: Clip) -> np.ndarray:
            pred = tracked(_head_probs(key, h, c), on, off, min_s, cov)
            return np.maximum(pred, tag_path(c, cov)) if hybrid else pred
        return cov, predict
    return method


def averaged(kind: str, C: float, weight: float, on: float, min_s: float = 2.0) -> Method:
    """`weight` x the head's probability + (1 - `weight`) x the map's score, one threshold."""
    def method(train):
        key, h = _head(train, kind, C)

        def predict(c: Clip) -> np.ndarray:
            s = weight * _head_probs(key, h, c) + (1 - weight) * mapped_scores(c.probs)
            return tracked(s, on, on, min_s, set(h.models))
        return set(h.models), predict
    return method


def score(preds: list[np.ndarray], gts: list[np.ndarray]) -> tuple[float, dict[str, float]]:
    """Mean pooled event F1 at tIoU 0.5 over the non-Speech classes with a true event, and per class."""
    f1 = {LLP_CLASSES[c]: round(v, 3) for c, v in pooled_class_f1(preds, gts, 5).items() if c != SPEECH}
    return (float(np.mean(list(f1.values()))) if f1 else 0.0), f1


def false_per_min(preds: list[np.ndarray], gts: list[np.ndarray]) -> float:
    """False events per minute on the eventless clips (no true sound event)."""
    events = seconds = 0
    for p, g in zip(preds, gts, strict=True):
        if not g.any():
            seconds += len(g)
            events += sum(len(extract_events(p[:, c])) for c in range(p.shape[1]))
    return 60.0 * events / max(1, seconds)


def run_split(method: Method, split: Split, all_classes: bool = False) -> tuple[float, float, dict[str, float]]:
    """(mean F1, false events / min, per-class F1) over the held-out clips of every fold, counts pooled."""
    preds, gts = [], []
    for train, held in split:
        cov, predict = method(train)
        mask = np.ones(len(LLP_CLASSES), bool) if all_classes else np.isin(np.arange(len(LLP_CLASSES)), list(cov))
        for c in held:
            preds.append(predict(c) * mask)
            gts.append(c.labels * mask)
    mean, per_class = score(preds, gts)
    return mean, false_per_min(preds, gts), per_class


def evaluate(method: Method, val: Split, cv: list[Split], all_classes: bool = False) -> dict:
    """Val (train -> val) and grouped CV (mean and sd over repeats) of one method."""
    v_mean, v_fp, v_f1 = run_split(method, val, all_classes)
    runs = [run_split(method, s, all_classes) for s in cv]
    means, fps = [r[0] for r in runs], [r[1] for r in runs]
    return {"val": round(v_mean, 3), "val_false_per_min": round(v_fp, 2), "val_per_class": v_f1,
            "cv": round(float(np.mean(means)), 3), "cv_sd": round(float(np.std(means)), 3),
            "cv_false_per_min": round(float(np.mean(fps)), 2), "cv_classes": len(runs[0][2]),
            "cv_runs": [round(m, 3) for m in means]}


def grid() -> list[tuple[str, Method, bool]]:
    """Every variant tried, in the order tried: (name, method, score all 16 classes)."""
    c = StageConfig()
    shipped = f"tag path (shipped, {c.yamnet}: {c.tag_threshold}, top {c.tag_top_k}, {c.tag_min_s:g} s)"
    rows: list[tuple[str, Method, bool]] = [(shipped, baseline(), False),
                                            ("tag path, all classes", baseline(), True)]
    rows += [(f"map, one threshold {on}, shortest {m} s", map_threshold(on, m), False)
             for on, m in itertools.product((0.2, 0.3, 0.4, 0.5), (1.0, 2.0))]
    rows.append(("map, per-class thresholds fitted on the training side, shortest 2 s", map_class_thresholds(), False))
    for kind, C, on, m in itertools.product(("p521", "emb", "p521+map"), (0.01, 0.1, 1.0), (0.5, 0.7, 0.9), (1.0, 2.0)):
        rows.append((f"head {kind} C={C}, threshold {on}, shortest {m} s", head(kind, C, on, on, m), False))
    for bal, C, on, off, m in itertools.product((True, False), (0.01, 0.1, 1.0), (0.3, 0.5, 0.7, 0.9), (0.0, 0.2),
                                                (1.0, 2.0)):
        if on - off > 0.05:
            rows.append((f"head own{'' if bal else ' unweighted'} C={C}, on {on} off {on - off:.1f}, shortest {m} s",
                         head("own", C, on, round(on - off, 1), m, balanced=bal), False))
    for kind, C, on in (("own", 0.01, 0.9), ("p521", 1.0, 0.7), ("p521", 1.0, 0.9), ("emb", 0.01, 0.9)):
        for every in (False, True):
            rows.append((f"hybrid: tag path + head {kind} C={C} threshold {on}{', all classes' if every else ''}",
                         head(kind, C, on, on, 2.0, hybrid=True), every))
    for (kind, C), w, on in itertools.product((("p521", 1.0), ("emb", 0.01), ("own", 0.01)), (0.3, 0.5, 0.7),
                                              (0.3, 0.4, 0.5, 0.6)):
        rows.append((f"average: {w} x head {kind} C={C} + {1 - w:.1f} x map, threshold {on}", averaged(kind, C, w, on),
                     False))
    return rows


RECHECKED = {"average: 0.5 x head p521 C=1.0 + 0.5 x map, threshold 0.5": averaged("p521", 1.0, 0.5, 0.5),
             "average: 0.3 x head p521 C=1.0 + 0.7 x map, threshold 0.4": averaged("p521", 1.0, 0.3, 0.4),
             "average: 0.5 x head own C=0.01 + 0.5 x map, threshold 0.5": averaged("own", 0.01, 0.5, 0.5),
             "head own C=0.01, on 0.9 off 0.9, shortest 2.0 s": head("own", 0.01, 0.9, 0.9, 2.0),
             "map, per-class thresholds fitted on the training side, shortest 2 s": map_class_thresholds()}


def recheck(clips: list[Clip], seeds: range, k: int = 3) -> dict:
    """The leading variants against the tag path on fresh fold draws (seeds not used while choosing them):
    the paired difference per draw, and how often each side won."""
    splits = [grouped_folds(clips, k, s) for s in seeds]
    ref = [run_split(baseline(), s) for s in splits]
    out = {"seeds": list(seeds), "tag path": {"cv": round(float(np.mean([r[0] for r in ref])), 3),
                                              "cv_false_per_min": round(float(np.mean([r[1] for r in ref])), 2)}}
    for name, method in RECHECKED.items():
        runs = [run_split(method, s) for s in splits]
        diff = np.array([r[0] for r in runs]) - np.array([r[0] for r in ref])
        out[name] = {"cv": round(float(np.mean([r[0] for r in runs])), 3),
                     "cv_sd": round(float(np.std([r[0] for r in runs])), 3),
                     "cv_false_per_min": round(float(np.mean([r[1] for r in runs])), 2),
                     "diff_vs_tag_path": round(float(diff.mean()), 3), "wins": int((diff > 0).sum()),
                     "losses": int((diff < 0).sum())}
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", type=Path, default=Path("data/corpus_v4"))
    p.add_argument("--out", type=Path, default=Path("docs/results/llp_head_v4.json"))
    p.add_argument("--folds", type=int, default=3)
    p.add_argument("--repeats", type=int, default=3, help="fold draws (seeds 0..) the variants are compared on")
    a = p.parse_args(argv)
    if not (a.corpus / "corpus.json").is_file():
        p.error(f"no corpus at {a.corpus} (build it: foresight train corpus --version 4 --out {a.corpus})")
    t0 = time.perf_counter()
    try:
        check_corpus_yamnet(a.corpus, StageConfig().yamnet)
    except ValueError as exc:
        p.error(str(exc))
    clips = load_clips(a.corpus)
    val = [([c for c in clips if c.split == "train"], [c for c in clips if c.split == "val"])]
    cv = [grouped_folds(clips, a.folds, s) for s in range(a.repeats)]
    rows = []
    for name, method, every in grid():
        rows.append({"variant": name, "all_classes": every, **evaluate(method, val, cv, every)})
        r = rows[-1]
        print(f"{name:80s} val {r['val']:.3f} ({r['val_false_per_min']:.2f}/min)  cv {r['cv']:.3f} ± {r['cv_sd']:.3f} "
              f"({r['cv_false_per_min']:.2f}/min)", flush=True)
    report = {"corpus": str(a.corpus), "folds": a.folds, "repeats": a.repeats, "clips": len(clips),
              "fold_sizes": [[(len(t), len(h)) for t, h in s] for s in cv], "variants": rows,
              "recheck": recheck(clips, range(10, 20), a.folds), "seconds": round(time.perf_counter() - t0)}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report["recheck"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
