"""Choose the fusion of the learned grounder with text matching on val (`models/trisense/fusion.py`).

Why: the learned grounder abstains on unseen concepts that text matching finds; whether a calibrated mix of the two
beats both has to be decided on val only. For each checkpoint (its held-out concepts come from its corpus stamp, so
a checkpoint trained with an extra val class held out gives the val "held-out proxy"), every val query's candidates
are computed once; then each mixing weight gets its own abstention threshold (`generalise.calibrate`, balanced
accuracy) and its val figures, and so does the "max" rule (each method's score minus its own val threshold).
`--choose` picks the fusion with the best mean val balanced accuracy over all the checkpoints given, `--write`
stores it next to each checkpoint (`<name>.fusion.json`, which `Grounder.load` applies); `--test` scores the stored
fusion on test, once.

    python -m training.trisense.fusion_trials CKPT... --out docs/results/grounding_v3_fusion_val.json --choose --write
    python -m training.trisense.fusion_trials CKPT... --test docs/results/grounding_v3.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

from models.trisense.baselines import TextMatchBaseline
from models.trisense.fusion import FusionConfig, fuse
from models.trisense.grounder import FUSION_CANDIDATES, Grounder, fusion_path, nms_moments
from training.trisense.data import MomentRecord
from training.trisense.generalise import ALL, _metrics, calibrate, report, val_threshold
from training.trisense.open_vocab import OpenVocabData
from training.trisense.trials import cell

WEIGHTS = tuple(round(w, 2) for w in np.linspace(0.0, 1.0, 11))


def candidates(g: Grounder, text: TextMatchBaseline, data: OpenVocabData, records: list[MomentRecord]) -> dict:
    """`qid -> (learned moments, text moments)` before any threshold."""
    out = {}
    for r in records:
        clip = data.features[r.vid]
        learned = g.answer(r.query, clip, top_k=FUSION_CANDIDATES, abstain=False).moments
        out[r.qid] = (learned, text.ground(r.query, clip, top_k=100))
    return out


def fused_predictions(cands: dict, cfg: FusionConfig) -> tuple[dict, dict]:
    """Top-1 span and fused score per query under one fusion (its threshold is not applied here)."""
    spans, scores = {}, {}
    for qid, (learned, text) in cands.items():
        top = nms_moments(fuse(learned, text, cfg), 1)
        spans[qid] = (top[0].start, top[0].end) if top else None
        scores[qid] = top[0].score if top else 0.0
    return spans, scores


def figures(data: OpenVocabData, split: str, preds: tuple[dict, dict], threshold: float) -> dict:
    """Overall, held-out/seen and per-modality figures of one prediction set (as `generalise.report`)."""
    pos, neg = data.positives(split), data.absent_queries(split)
    out = _metrics(pos, neg, preds, threshold)
    out["threshold"] = threshold
    out["per_modality"] = {m: _metrics([r for r in pos if r.extra["modality"] == m],
                                       [r for r in neg if r.extra["modality"] == m], preds, threshold) for m in ALL}
    for name, held in (("held_out_concepts", True), ("seen_concepts", False)):
        out[name] = _metrics(data.positives(split, held_out=held), [], preds, threshold)
    out["held_out_concepts"]["concepts"] = list(data.held_out)
    out["balanced_accuracy"] = 0.5 * (out["r1_iou03"] + out["abstention_accuracy"])
    return out


def val_sweep(ck: str, data: OpenVocabData, g: Grounder, text: TextMatchBaseline, t_threshold: float) -> dict:
    """Val figures of every mixing weight (each with its own calibrated threshold) and of the max-margin rule."""
    pos, neg = data.positives("val"), data.absent_queries("val")
    cands = candidates(g, text, data, pos + neg)
    out: dict = {"checkpoint": ck, "held_out": list(data.held_out), "mix": {}}
    for w in WEIGHTS:  # (per-modality figures only for the "max" rule, to keep the file small)
        preds = fused_predictions(cands, FusionConfig("mix", 0.0, weight=w))
        f = figures(data, "val", preds, calibrate(pos, neg, preds))
        out["mix"][str(w)] = {k: v for k, v in f.items() if k not in ("per_modality", "seen_concepts")}
    cfg = FusionConfig("max", 0.0, learned_threshold=g.threshold, text_threshold=t_threshold)
    preds = fused_predictions(cands, cfg)
    out["max"] = {"learned_threshold": g.threshold, "text_threshold": t_threshold,
                  "at_0.5": figures(data, "val", preds, 0.5), **figures(data, "val", preds, calibrate(pos, neg, preds))}
    return out


def choose(sweeps: list[dict]) -> dict:
    """The fusion ("max", or "mix" at one weight) with the best mean val balanced accuracy over every checkpoint
    (ties: "max", then the weight nearest 0.5)."""
    options = {"max": [s["max"] for s in sweeps]} | {f"mix:{w}": [s["mix"][w] for s in sweeps] for w in sweeps[0]["mix"]}
    mean = {k: float(np.mean([f["balanced_accuracy"] for f in v])) for k, v in options.items()}
    best = max(mean, key=lambda k: (mean[k], k == "max", -abs(float(k.split(":")[-1]) - 0.5) if ":" in k else 0))
    return {"fusion": best, "mean_balanced_accuracy": mean}


def config_of(sweep: dict, choice: str) -> FusionConfig:
    """The chosen fusion for one checkpoint, with that checkpoint's own val thresholds."""
    if choice == "max":
        f = sweep["max"]
        return FusionConfig("max", f["threshold"], learned_threshold=f["learned_threshold"],
                            text_threshold=f["text_threshold"])
    w = choice.split(":")[1]
    return FusionConfig("mix", sweep["mix"][w]["threshold"], weight=float(w))


def write_sidecar(sweep: dict, choice: str, command: str) -> Path:
    """`<checkpoint>.fusion.json`: the calibration `Grounder.load` applies, and the val figures it was chosen on."""
    path = fusion_path(sweep["checkpoint"])
    f = sweep["max"] if choice == "max" else sweep["mix"][choice.split(":")[1]]
    val = {k: f[k] for k in ("r1_iou03", "abstention_accuracy", "balanced_accuracy")}
    val["held_out_r1_iou03"] = f["held_out_concepts"].get("r1_iou03")
    path.write_text(json.dumps({"fusion": config_of(sweep, choice).to_dict(), "chosen_on": "val", "val": val,
                                "held_out_concepts": sweep["held_out"], "command": command}, indent=1) + "\n")
    return path


def val_table(sweep_file: Path) -> str:
    """Markdown: per setup (the shipped held-out concepts, or the proxy with one more val class held out) and fusion,
    val figures as mean ± sd over the checkpoints, in percent."""
    out = json.loads(sweep_file.read_text())
    setups: dict[str, list[dict]] = {}
    for s in out["sweeps"]:
        setups.setdefault("proxy" if len(s["held_out"]) > 4 else "standard", []).append(s)
    rows = [("text matching alone", lambda s: s["mix"]["0.0"]), ("learned grounder alone", lambda s: s["mix"]["1.0"])]
    rows += [(f"mix, weight {w}", lambda s, w=w: s["mix"][w]) for w in ("0.3", "0.5", "0.7")]
    rows += [("max (chosen)" if out.get("choice", {}).get("fusion") == "max" else "max", lambda s: s["max"])]
    keys = (("r1_iou03", False), ("r1_iou03_no_abstain", False), ("abstention_accuracy", False),
            ("r1_iou03", True), ("r1_iou03_no_abstain", True))
    lines = ["| setup | answer | checkpoints | R@0.3 | R@0.3 without abstaining | abstention | held-out R@0.3 "
             "| held-out without abstaining |", "|---|---|---|---|---|---|---|---|"]
    for setup, sweeps in setups.items():
        for label, pick in rows:
            cells = [cell([(pick(s)["held_out_concepts"] if held else pick(s)).get(k) for s in sweeps])
                     for k, held in keys]
            lines.append(f"| {setup} | {label} | {len(sweeps)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def score_test(checkpoints: list[str], corpus: Path, speech_corpus: Path, results: Path) -> dict:
    """Score each checkpoint's fused answer (its `<name>.fusion.json`) on test once, next to text matching, and
    append the attempt to `results` (the same file and layout as `generalise`, so `--table` prints it)."""
    text = TextMatchBaseline()
    runs: dict = {}
    for ck in checkpoints:
        g = Grounder.load(ck, text_encoder=text.text_encoder)
        if g.fusion is None:
            raise ValueError(f"{ck} has no fusion calibration: run --choose --write on val first")
        data = OpenVocabData(corpus, speech_corpus, tuple(g.meta["corpus"]["held_out_concepts"]))
        if not runs:
            runs["text-match"] = {"val_threshold": (tt := val_threshold(text, data)), "test": report(text, data, "test", tt)}
        runs[f"fused/seed{g.meta['train']['seed']}"] = {"checkpoint": ck, "fusion": g.fusion.to_dict(),
                                                      "test": report(g, data, "test", g.threshold)}
        row = runs[f"fused/seed{g.meta['train']['seed']}"]["test"]
        print(f"{ck}: R@0.3 {row['r1_iou03']:.3f} held-out {row['held_out_concepts']['r1_iou03']:.3f} "
              f"abstention {row['abstention_accuracy']:.3f}", flush=True)
    log = json.loads(results.read_text()) if results.is_file() else {"attempts": []}
    log["attempts"].append({"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "split": "test",
                            "fusion": "learned grounder + text matching (models/trisense/fusion.py), chosen on val",
                            "seeds": sorted(k for k in runs if k != "text-match"), "runs": runs})
    results.write_text(json.dumps(log, indent=1))
    return runs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m training.trisense.fusion_trials", description=__doc__.split("\n")[0])
    p.add_argument("checkpoints", nargs="+")
    p.add_argument("--corpus", default="data/corpus_v3")
    p.add_argument("--speech-corpus", default="data/corpus_v2")
    p.add_argument("--out", help="JSON file the val sweep (and the choice) is written to")
    p.add_argument("--table", action="store_true", help="print the val sweep file given as the argument as markdown")
    p.add_argument("--test", metavar="RESULTS", help="instead: score the checkpoints' stored fusion on test ONCE and "
                   "append the attempt to RESULTS (docs/results/grounding_v3.json)")
    p.add_argument("--choose", action="store_true", help="also pick the fusion (best mean val balanced accuracy)")
    p.add_argument("--write", action="store_true",
                   help="with --choose: write each checkpoint's calibration next to it (<name>.fusion.json)")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    if args.table:
        print(val_table(Path(args.checkpoints[0])))
        return 0
    if args.test:
        score_test(args.checkpoints, Path(args.corpus), Path(args.speech_corpus), Path(args.test))
        return 0
    if not args.out:
        p.error("--out is required for the val sweep")
    text = TextMatchBaseline()
    sweeps = []
    for ck in args.checkpoints:
        t0 = time.time()
        g = Grounder.load(ck, text_encoder=text.text_encoder, fused=False)
        data = OpenVocabData(Path(args.corpus), Path(args.speech_corpus), tuple(g.meta["corpus"]["held_out_concepts"]))
        sweeps.append(val_sweep(ck, data, g, text, val_threshold(text, data)))
        for w, f in sweeps[-1]["mix"].items():
            print(f"{ck} w={w}: R@0.3 {f['r1_iou03']:.3f} (no abst. {f['r1_iou03_no_abstain']:.3f}) abst "
                  f"{f['abstention_accuracy']:.3f} held-out {f['held_out_concepts'].get('r1_iou03', float('nan')):.3f} "
                  f"(no abst. {f['held_out_concepts'].get('r1_iou03_no_abstain', float('nan')):.3f}) "
                  f"th {f['threshold']:.3f}", flush=True)
        for name, f in (("max", sweeps[-1]["max"]), ("max@0.5", sweeps[-1]["max"]["at_0.5"])):
            print(f"{ck} {name}: R@0.3 {f['r1_iou03']:.3f} abst {f['abstention_accuracy']:.3f} held-out "
                  f"{f['held_out_concepts'].get('r1_iou03', float('nan')):.3f} th {f['threshold']:.3f} "
                  f"({time.time() - t0:.0f} s)", flush=True)
    out = {"split": "val", "weights": list(WEIGHTS), "sweeps": sweeps}
    if args.choose:
        out["choice"] = choose(sweeps)
        print("chosen:", out["choice"]["fusion"], flush=True)
        command = "python -m training.trisense.fusion_trials " + " ".join(argv if argv is not None else sys.argv[1:])
        for sweep in sweeps if args.write else []:
            print("wrote", write_sidecar(sweep, out["choice"]["fusion"], command))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
