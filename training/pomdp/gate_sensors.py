"""Measure the risk gate as a sensor: its held-out probability on risk-free and risky logs, per condition.

`python -m training.pomdp.gate_sensors [--runs 2]` writes `data/gate_sensors.json`: for each measurement
condition, a histogram (on `GRID` equal bins of [0, 1]) of the gate's probability on risk-free logs
(every prefix of a dev log that ends before its risky segment) and on risky logs (the full log). The
three conditions are the sensor models the escalation ME-POMDP has to be robust to, fixed before any
policy was solved:

- `as_written`: the PaSBench dev logs as written;
- `in_sample`: the same logs scored by the all-logs model that was fitted on them (the optimistic
  calibration one would assume without held-out folds);
- `perturbed`: `perturb_log`'s default perturbations (the evaluation's 16-run protocol), evidence kept;
- `degraded`: a poorer captioner (twice the drop/swap/paraphrase rates), evidence may be lost.

Every other score comes from the fold model that never saw the log, so those histograms are held out.
`folds` splits each condition's histograms by that fold (5 folds by a hash of the log text): the spread
of the gate's behaviour between folds is the uncertainty of a sensor model estimated from ~45 logs.
Needs the PaSBench dev logs and MiniLM; about 2-4 minutes on one core. The committed JSON is what the
experiment and the shipped escalation policy read, so they run without either.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from tqdm import tqdm

DATA_FILE = Path(__file__).resolve().parent / "data" / "gate_sensors.json"
GRID = 20
CONDITIONS = ("as_written", "in_sample", "perturbed", "degraded")


def _perturb_configs() -> dict:
    from training.safety.perturb import PerturbConfig

    return {"perturbed": PerturbConfig(),
            "degraded": PerturbConfig(drop_segment=0.4, swap_adjacent=0.3, drop_final_sentence=0.2,
                                      paraphrase_sentence=0.4)}


def measure(logs_file: str | None = None, runs: int = 2, limit: int | None = None,
            progress: bool = True) -> dict:
    """Held-out gate probabilities binned per condition and class (0 = risk-free, 1 = risky)."""
    from models.safety.embed import SentenceEmbedder
    from models.safety.knowledge import load_rules, load_scenarios
    from models.safety.logparse import parse_log
    from models.safety.retrieval import BACKGROUND_FILE, RuleRetriever
    from models.safety.risk_gate import RiskGate, gate_features, log_fold
    from training.safety.perturb import perturb_log
    from training.safety.replay import evidence_sentence, risky_segment

    scenarios = load_scenarios(logs_file)[:limit]
    retriever = RuleRetriever(load_rules(), SentenceEmbedder(), background=BACKGROUND_FILE)
    gate = RiskGate.load()
    configs = _perturb_configs()
    scores: dict[str, list[list[float]]] = {c: [[], []] for c in CONDITIONS}
    folds: dict[str, list[list[int]]] = {c: [[], []] for c in CONDITIONS}

    def score(segs, log: str, full: bool = False) -> float:
        a = retriever.analyse([s.text() for s in segs])
        return float(gate.full(gate_features(a)[None])[0]) if full else gate.probability(a, log)

    for sc in tqdm(scenarios, desc="gate sensors", unit="log", file=sys.stderr, disable=not progress):
        before = {c: (len(scores[c][0]), len(scores[c][1])) for c in CONDITIONS}
        segments = parse_log(sc.log)
        k = risky_segment(segments, sc.trigger)
        keep = evidence_sentence(segments[-1], sc.trigger) if k == len(segments) - 1 else None
        scores["as_written"][1].append(score(segments, sc.log))
        scores["as_written"][0] += [score(segments[:j], sc.log) for j in range(1, k + 1)]
        scores["in_sample"][1].append(score(segments, sc.log, full=True))
        scores["in_sample"][0] += [score(segments[:j], sc.log, full=True) for j in range(1, k + 1)]
        for name, cfg in configs.items():
            kept = keep if name == "perturbed" else None
            for seed in range(runs):
                scores[name][1].append(score(perturb_log(segments, seed, cfg, keep=kept), sc.log))
                scores[name][0] += [score(perturb_log(segments[:j], seed, cfg), sc.log) for j in range(1, k + 1)]
        fold = log_fold(sc.log, len(gate.folds))
        for c in CONDITIONS:
            for cls in (0, 1):
                folds[c][cls] += [fold] * (len(scores[c][cls]) - before[c][cls])
    edges = np.linspace(0.0, 1.0, GRID + 1)

    def histogram(values) -> list[int]:
        return np.histogram(np.clip(values, 0, 1), edges)[0].astype(int).tolist()

    hist = {c: {cls: histogram(v) for cls, v in zip(("safe", "risky"), scores[c], strict=True)} for c in CONDITIONS}
    by_fold = {c: [{cls: histogram(np.asarray(v)[np.asarray(folds[c][i]) == f])
                    for i, (cls, v) in enumerate(zip(("safe", "risky"), scores[c], strict=True))}
                   for f in range(len(gate.folds))] for c in CONDITIONS}
    return {"grid": GRID, "logs": len(scenarios), "runs": runs, "conditions": hist, "folds": by_fold,
            "mean": {c: {cls: float(np.mean(v)) for cls, v in zip(("safe", "risky"), scores[c], strict=True)}
                     for c in CONDITIONS}}


def load(path: str | Path = DATA_FILE) -> dict:
    """The committed measurement (see `measure`)."""
    return json.loads(Path(path).read_text())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m training.pomdp.gate_sensors", description=__doc__.splitlines()[0])
    p.add_argument("--logs", help="PaSBench text-log JSON (default: the development logs)")
    p.add_argument("--runs", type=int, default=2, help="perturbed copies per log and condition")
    p.add_argument("--limit", type=int, help="only the first N logs (quick look)")
    p.add_argument("--out", default=str(DATA_FILE))
    a = p.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    doc = measure(a.logs, a.runs, a.limit)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(doc, indent=1) + "\n")
    print(json.dumps(doc["mean"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
