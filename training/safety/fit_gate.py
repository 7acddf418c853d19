"""Fit the risk gate on PaSBench-format logs: `python -m training.safety.fit_gate [--logs FILE] [--runs 16] [--background]`.

`--background` first refits the retriever's hub correction (`data/background.npz`): every rule's mean
similarity on the first two segments of each log, which open a scenario before anything risky happens.

Examples come from log structure, not from rule labels: each prefix that ends before the risky
segment (the one best matching `risk_triggering_behavior`) is risk-free, the full log and its
perturbed copies (evidence sentence kept) are risky. Writes `data/risk_gate.npz` with the all-logs
model and one model per held-out fold (see `risk_gate.py`).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import torch
from tqdm import tqdm

from models.safety.knowledge import Scenario, load_rules, load_scenarios
from models.safety.logparse import parse_log
from models.safety.retrieval import BACKGROUND_FILE, RuleRetriever
from models.safety.risk_gate import GATE_FILE, RiskGate, gate_features
from models.sentences import SentenceEncoder
from training.safety.perturb import perturb_log
from training.safety.replay import evidence_sentence, risky_segment


def gate_examples(scenarios: list[Scenario], retriever: RuleRetriever, runs: int = 16,
                  progress: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Features, labels (1 = risky now), weights and source log of every training example."""
    xs, ys, ws, logs = [], [], [], []

    def add(segments, label, weight, log):
        xs.append(gate_features(retriever.analyse([s.text() for s in segments])))
        ys.append(label)
        ws.append(weight)
        logs.append(log)

    for sc in tqdm(scenarios, desc="risk gate examples", unit="log", file=sys.stderr, disable=not progress):
        segments = parse_log(sc.log)
        k = risky_segment(segments, sc.trigger)
        for j in range(1, k + 1):
            add(segments[:j], 0, 1.0, sc.log)
        add(segments, 1, 1.0, sc.log)
        keep = evidence_sentence(segments[-1], sc.trigger) if k == len(segments) - 1 else None
        for seed in range(runs):
            add(perturb_log(segments, seed, keep=keep), 1, 1.0 / runs, sc.log)
    return np.stack(xs), np.array(ys), np.array(ws, dtype=np.float32), logs


BENIGN_SEGMENTS = 2


def fit_background(retriever: RuleRetriever, scenarios: list[Scenario], out: str = str(BACKGROUND_FILE)) -> int:
    """Refit and save the hub correction from the opening segments of `scenarios`; the segment count."""
    opening = [seg.text() for sc in scenarios for seg in parse_log(sc.log)[:BENIGN_SEGMENTS]]
    retriever.fit_background(opening)
    retriever.save_background(out)
    return len(opening)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m training.safety.fit_gate", description=__doc__.splitlines()[0])
    p.add_argument("--logs", help="PaSBench text-log JSON (default: the development logs)")
    p.add_argument("--runs", type=int, default=16, help="perturbed copies per log used as positives")
    p.add_argument("--c", type=float, default=0.01, help="inverse L2 strength of the logistic regression")
    p.add_argument("--out", default=str(GATE_FILE))
    p.add_argument("--background", action="store_true",
                   help=f"first refit the retriever's hub correction ({BACKGROUND_FILE.name}) on these logs")
    p.add_argument("--background-out", default=str(BACKGROUND_FILE))
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    scenarios = load_scenarios(args.logs)
    if args.background:
        retriever = RuleRetriever(load_rules(), SentenceEncoder(), background=None)
        n = fit_background(retriever, scenarios, args.background_out)
        print(f"hub correction: {n} opening segments -> {args.background_out}")
    else:
        retriever = RuleRetriever(load_rules(), SentenceEncoder(), background=BACKGROUND_FILE)
    x, y, w, logs = gate_examples(scenarios, retriever, args.runs)
    RiskGate.fit(x, y, w, logs, c=args.c).save(args.out)
    print(f"risk gate: {int(y.sum())} risky / {int((1 - y).sum())} risk-free examples -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
