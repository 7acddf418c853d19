"""Train, calibrate and score the open-vocabulary grounder (evidence channel + abstention) on corpus v3.

One run = for each seed, the query-connector model and its equal-weights ablation trained on the seen concepts
of v3's train split (plus v2's spoken sentences), each abstention threshold chosen on val, then every method
scored once on test; the text-match baseline gets a val-chosen threshold too. Every attempt is appended to the
results JSON. `report` is the scoring used both here and by `perception_grounding` (`foresight eval perception`).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from models.trisense.baselines import TextMatchBaseline
from models.trisense.evidence import EVIDENCE_DIM
from models.trisense.grounder import Grounder, save_checkpoint
from models.trisense.metrics import best_iou
from models.trisense.modeling_trisense import TriSenseConfig
from training.trisense.data import MomentRecord
from training.trisense.evaluate import predict_model, predict_text, query_vectors
from training.trisense.open_vocab import HELD_OUT_CONCEPTS, OpenVocabData
from training.trisense.trainer import TrainConfig, train
from training.trisense.trials import cell

ALL = ("visual", "audio", "speech")
Predictions = tuple[dict[str, tuple[float, float] | None], dict[str, float]]


def predict(method, data: OpenVocabData, records: list[MomentRecord]) -> Predictions:
    """Top-1 span and its score per query (no abstention yet) for a Grounder (fused with text matching when its
    checkpoint carries a fusion calibration) or the TextMatchBaseline."""
    scores: dict[str, float] = {}
    if isinstance(method, TextMatchBaseline):
        return predict_text(method, records, data.features, ALL, scores), scores
    if method.fusion is not None:  # the same path as `foresight analyze --query`
        spans: dict[str, tuple[float, float] | None] = {}
        for r in records:
            top = method.answer(r.query, data.features[r.vid], top_k=1, abstain=False).moments
            spans[r.qid], scores[r.qid] = ((top[0].start, top[0].end), top[0].score) if top else (None, 0.0)
        return spans, scores
    qvecs = query_vectors(records, method)
    return predict_model(method, records, data.features, ALL, qvecs, scores=scores), scores


def calibrate(positives: list[MomentRecord], negatives: list[MomentRecord], preds: Predictions) -> float:
    """The threshold with the best balanced accuracy: a query with an answer must be answered at IoU >= 0.3,
    one without must get no moment. Ties go to the middle of the best interval."""
    spans, scores = preds
    pos = np.array([scores[r.qid] for r in positives])
    pos_ok = np.array([spans[r.qid] is not None and best_iou(spans[r.qid], r.windows) >= 0.3 for r in positives])
    neg = np.array([scores[r.qid] for r in negatives])
    cands = np.unique(np.concatenate([pos, neg, [0.0, 1.0]]))
    mids = np.concatenate([[0.0], (cands[1:] + cands[:-1]) / 2, [1.0 + 1e-6]])
    acc = np.array([0.5 * ((pos_ok & (pos >= t)).mean() + (neg < t).mean()) for t in mids])
    best = np.flatnonzero(acc >= acc.max() - 1e-12)
    return float((mids[best[0]] + mids[best[-1]]) / 2)


def _metrics(positives: list[MomentRecord], negatives: list[MomentRecord], preds: Predictions,
             threshold: float | None) -> dict:
    spans, scores = preds
    t = -np.inf if threshold is None else threshold
    ious = [best_iou(spans[r.qid], r.windows) if spans[r.qid] is not None and scores[r.qid] >= t else 0.0
            for r in positives]
    raw = [best_iou(spans[r.qid], r.windows) if spans[r.qid] is not None else 0.0 for r in positives]
    out: dict = {"n": len(positives), "n_absent": len(negatives)}
    if positives:
        out.update(r1_iou03=float(np.mean(np.array(ious) >= 0.3)), r1_iou05=float(np.mean(np.array(ious) >= 0.5)),
                   miou=float(np.mean(ious)), answered=float(np.mean([scores[r.qid] >= t for r in positives])),
                   r1_iou03_no_abstain=float(np.mean(np.array(raw) >= 0.3)))
    if negatives:
        out["abstention_accuracy"] = float(np.mean([scores[r.qid] < t for r in negatives]))
        out["false_positive_rate"] = 1.0 - out["abstention_accuracy"]
    return out


def report(method, data: OpenVocabData, split: str, threshold: float | None) -> dict:
    """Scores on `split`: overall (`r1_iou03`, `r1_iou05`, `miou`, `abstention_accuracy`, ...), `per_modality`,
    and `held_out_concepts` / `seen_concepts`; answers under `threshold` count as "not found"."""
    positives, negatives = data.positives(split), data.absent_queries(split)
    preds = predict(method, data, positives + negatives)
    out = _metrics(positives, negatives, preds, threshold)
    out["threshold"] = threshold
    out["per_modality"] = {m: _metrics([r for r in positives if r.extra["modality"] == m],
                                       [r for r in negatives if r.extra["modality"] == m], preds, threshold)
                           for m in ALL}
    for name, held in (("held_out_concepts", True), ("seen_concepts", False)):
        out[name] = _metrics(data.positives(split, held_out=held), [], preds, threshold)
    out["held_out_concepts"]["concepts"] = list(data.held_out)
    return out


def val_threshold(method, data: OpenVocabData) -> float:
    positives, negatives = data.positives("val"), data.absent_queries("val")
    return calibrate(positives, negatives, predict(method, data, positives + negatives))


def stamp(data: OpenVocabData) -> dict:
    """Which clips could train the model: every clip of each corpus's train split (the leakage test rebuilds both
    corpora's splits from this)."""
    def ids(root: Path, modality: tuple[str, ...]) -> list[str]:
        truths = [json.loads(p.read_text()) for p in sorted((root / "truth").glob("*.json"))]
        return sorted(t["clip_id"] for t in truths if t["split"] == "train")

    meta = json.loads((data.corpus / "corpus.json").read_text())
    out = {"name": data.corpus.name, "version": meta.get("version", 1), "seed": meta["seed"], "clips": meta["clips"],
           "trained_on": ["train"], "calibrated_on": ["val"], "train_ids": ids(data.corpus, ("audio", "visual")),
           "held_out_concepts": list(data.held_out)}
    if data.speech_corpus is not None:
        sm = json.loads((data.speech_corpus / "corpus.json").read_text())
        out["speech_corpus"] = {"name": data.speech_corpus.name, "seed": sm["seed"], "clips": sm["clips"],
                                "trained_on": ["train"], "train_ids": ids(data.speech_corpus, ("speech",))}
    return out


def train_one(data: OpenVocabData, out: Path, seed: int, epochs: int, equal: bool, dims: dict[str, int],
              raw_dropout: float = 0.0, query_dropout: float = 0.0, tagger_per_epoch: int = 0,
              tagger_audio_confidence: float | None = None) -> Grounder:
    """Train one model, calibrate its threshold on val and save it with the threshold in its config."""
    config = TriSenseConfig(visual_dim=dims["visual"], audio_dim=dims["audio"], speech_dim=dims["speech"],
                            evidence_dim=EVIDENCE_DIM, fixed_modality_weights=equal, raw_dropout=raw_dropout,
                            query_dropout=query_dropout)
    sampler = data.sampler(tagger_per_epoch=tagger_per_epoch, tagger_audio_confidence=tagger_audio_confidence)
    tc = TrainConfig(epochs=epochs, batch_size=32, lr=1e-3, seed=seed, progress=False)
    first = sampler(-1, random.Random(seed))
    model, info = train(config, first, data.features, out, tc, meta={"corpus": stamp(data)}, sampler=sampler)
    grounder = Grounder(model)
    threshold = val_threshold(grounder, data)
    model.config = replace(model.config, abstain_threshold=threshold)
    save_checkpoint(out, model, {**info["meta"], "val_threshold": threshold})
    return Grounder.load(out)


def _dims(data: OpenVocabData) -> dict[str, int]:
    dims: dict[str, int] = {}
    for r in data.records["train"]:
        clip = data.features[r.vid]
        dims.update({m: int(getattr(clip, m).shape[1]) for m in ALL if getattr(clip, m) is not None})
    return dims


ROWS = (("all queries", None), ("held-out concepts", "held_out_concepts"), ("seen concepts", "seen_concepts"),
        ("visual", "visual"), ("audio", "audio"), ("speech (v2 sentences)", "speech"))


def _pick(r: dict, group: str | None) -> dict:
    if group is None:
        return r
    return r[group] if group in r else r["per_modality"][group]


def table(attempt: dict) -> str:
    """Markdown: one row per method and query group, mean ± sd over seeds, in percent."""
    split, runs = attempt["split"], attempt["runs"]
    methods: dict[str, list[dict]] = {}
    for name, run in runs.items():
        methods.setdefault(name.split("/")[0], []).append(run[split])
    keys = ("r1_iou03", "r1_iou05", "miou", "answered", "r1_iou03_no_abstain", "abstention_accuracy")
    lines = ["| method | queries | n | R@1 IoU0.3 | R@1 IoU0.5 | mIoU | answered | R@0.3 without abstaining "
             "| abstention accuracy (n absent) |", "|---|---|---|---|---|---|---|---|---|"]
    for method, rows in methods.items():
        for label, group in ROWS:
            picked = [_pick(r, group) for r in rows]
            if not picked[0].get("n"):
                continue
            cells = [cell([p[k] for p in picked]) if k in picked[0] else "–" for k in keys]
            cells[-1] += f" ({picked[0]['n_absent']})" if picked[0].get("n_absent") else ""
            lines.append(f"| {method} ({len(rows)} seed{'s' if len(rows) > 1 else ''}) | {label} | "
                         f"{picked[0]['n']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run_main(argv: list[str] | None = None) -> int:
    """Train seeds x {connector, equal weights}, calibrate on val, score test once each, append to --results."""
    p = argparse.ArgumentParser(prog="python -m training.trisense.generalise", description=run_main.__doc__)
    p.add_argument("--corpus", default="data/corpus_v3")
    p.add_argument("--speech-corpus", default="data/corpus_v2")
    p.add_argument("--runs", default="data/grounder_v3_runs", help="checkpoints go here")
    p.add_argument("--results", default="docs/results/grounding_v3.json")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--epochs", type=int, default=40)
    p.add_argument("--no-test", action="store_true", help="train and calibrate only (val scores)")
    p.add_argument("--no-equal", action="store_true", help="skip the equal-weights ablation")
    p.add_argument("--hold-out", nargs="+", default=list(HELD_OUT_CONCEPTS),
                   help="LLP classes no training query names (default: %(default)s)")
    p.add_argument("--speech-corpus-extra", nargs="*", default=[], choices=["audio", "visual"],
                   help="also train on the speech corpus's queries in these modalities")
    p.add_argument("--table", action="store_true", help="print one attempt in --results as markdown and exit")
    p.add_argument("--attempt", type=int, default=-1, help="which attempt --table prints (default: the last)")
    p.add_argument("--query-dropout", type=float, default=0.0,
                   help="chance that a training sample's model sees only the evidence, not the query")
    p.add_argument("--tagger-queries", type=int, default=0,
                   help="extra queries per epoch from the taggers' own outputs on the train clips (0: none)")
    p.add_argument("--tagger-audio-confidence", type=float, default=None,
                   help="a second fires for an AudioSet name at this tag confidence (default: tagger_queries.MIN_CONFIDENCE)")
    p.add_argument("--raw-dropout", type=float, default=0.0,
                   help="chance that a training sample's modality keeps only its evidence")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    if args.table:
        if not Path(args.results).is_file():
            print(f"error: no results at {args.results}", file=sys.stderr)
            return 2
        print(table(json.loads(Path(args.results).read_text())["attempts"][args.attempt]))
        return 0
    try:
        speech = Path(args.speech_corpus) if args.speech_corpus else None
        data = OpenVocabData(Path(args.corpus), speech if speech and speech.is_dir() else None, tuple(args.hold_out),
                             tuple(args.speech_corpus_extra))
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    results_path = Path(args.results)
    log = json.loads(results_path.read_text()) if results_path.is_file() else {"attempts": []}
    dims, split = _dims(data), "val" if args.no_test else "test"
    text = TextMatchBaseline()
    runs: dict = {"text-match": {"val_threshold": (tt := val_threshold(text, data)), split: report(text, data, split, tt)}}
    for seed in args.seeds:
        for name, equal in (("trisense", False), ("equal-weights", True))[: 1 if args.no_equal else 2]:
            t0 = time.time()
            path = Path(args.runs) / f"seed{seed}" / f"{name}.pt"
            g = train_one(data, path, seed, args.epochs, equal, dims, args.raw_dropout, args.query_dropout,
                          args.tagger_queries, args.tagger_audio_confidence)
            runs[f"{name}/seed{seed}"] = {"checkpoint": str(path), "val_threshold": g.threshold,
                                          "train_s": round(time.time() - t0, 1),
                                          split: report(g, data, split, g.threshold)}
            row = runs[f"{name}/seed{seed}"][split]
            print(f"{name} seed {seed}: R@0.3 {row['r1_iou03']:.3f} held-out {row['held_out_concepts'].get('r1_iou03', float('nan')):.3f} "
                  f"abstention {row['abstention_accuracy']:.3f} ({time.time() - t0:.0f} s)", flush=True)
    log["attempts"].append({"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "split": split,
                            "epochs": args.epochs, "raw_dropout": args.raw_dropout, "hold_out": args.hold_out,
                            "speech_corpus_extra": args.speech_corpus_extra,
                            "query_dropout": args.query_dropout, "tagger_queries": args.tagger_queries,
                            "tagger_audio_confidence": args.tagger_audio_confidence,
                            "seeds": args.seeds,
                            "runs": runs})
    results_path.parent.mkdir(parents=True, exist_ok=True)
    results_path.write_text(json.dumps(log, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(run_main())

def perception_grounding(corpus: Path, split: str = "test", checkpoint: Path | None = None,
                         speech_corpus: Path | None = None) -> dict:
    """The open-vocabulary grounder's scores (`OPEN_VOCAB_CHECKPOINT` unless `checkpoint`, fused with text matching
    when the checkpoint has a fusion file) on a corpus v3 split, for `foresight eval perception` (fractions in [0, 1]).

    Keys: `r1_iou03`, `r1_iou05`, `miou` (over the split's queries; an answer below the calibrated threshold is a
    miss), `abstention_accuracy` and `false_positive_rate` (over absent-answer queries), `answered`,
    `r1_iou03_no_abstain`, `n`, `n_absent`, `threshold`, `per_modality` (`visual`/`audio`/`speech`, each with the
    same keys) and `held_out_concepts` / `seen_concepts` (the concepts the checkpoint's stamp says no training
    query named). Spoken-sentence queries come from `speech_corpus`
    (default: a `corpus_v2` folder next to `corpus`, when present), since corpus v3 holds no English speech.
    """
    from models.trisense import OPEN_VOCAB_CHECKPOINT

    corpus = Path(corpus)
    if split not in ("train", "val", "test"):
        raise ValueError(f"split must be train, val or test, got {split!r}")
    if speech_corpus is None and (corpus.parent / "corpus_v2" / "grounding").is_dir():
        speech_corpus = corpus.parent / "corpus_v2"
    grounder = Grounder.load(checkpoint or OPEN_VOCAB_CHECKPOINT)
    held_out = (grounder.meta.get("corpus") or {}).get("held_out_concepts")  # the concepts this model never saw
    data = OpenVocabData(corpus, speech_corpus, *([tuple(held_out)] if held_out is not None else []))
    out = report(grounder, data, split, grounder.threshold)
    out["corpus"], out["speech_corpus"] = str(corpus), str(speech_corpus) if speech_corpus else None
    return out

