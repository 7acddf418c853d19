"""Measure the risk gate as a sensor: its held-out probability on risk-free and risky logs, per condition.

`python -m training.methods.pomdp.gate_sensors [--runs 2]` writes `data/gate_sensors.json`: for each measurement
condition, a histogram (on `GRID` equal bins of [0, 1]) of the gate's probability on risk-free logs
(every prefix of a dev log that ends before its risky segment) and on risky logs (the full log). The
conditions are the sensor models the escalation ME-POMDP has to be robust to, each fixed before a
policy was solved on it:

- `as_written`: the PaSBench dev logs as written;
- `in_sample`: the same logs scored by the all-logs model that was fitted on them (the optimistic
  calibration one would assume without held-out folds);
- `perturbed`: `perturb_log`'s default perturbations (the evaluation's 16-run protocol), evidence kept;
- `degraded`: a poorer captioner (twice the drop/swap/paraphrase rates), evidence may be lost;
- `spurious`: a captioner that over-reports: `perturb_log`'s default perturbations, and before them each
  segment gains, with chance `SPURIOUS_RATE`, a hazard object seen in another log (the environment
  sentence of that log's risky segment that best matches its trigger, e.g. "A 6-liter pressure cooker
  occupies the center of the granite countertop."): the object hallucination of captioning models;
- `spurious_acts`: the same, but what is added to the behaviour is another log's risky act (the sentence
  of its risky segment that best matches its trigger): a captioner that reports acts it did not see.

Every other score comes from the fold model that never saw the log, so those histograms are held out.
`folds` splits each condition's histograms by that fold (5 folds by a hash of the log text): the spread
of the gate's behaviour between folds is the uncertainty of a sensor model estimated from ~45 logs.
`settings` splits them by where the scored segment was (the newest one of a risk-free prefix, the risky
one of a risky log): `home` (a room of a home, by keyword) or `away` (streets, schools, trails, ...), the
two places a camera may be; their counts also give each setting's hazard. `pace` splits them by the log:
`short` if fewer than `PACE_SPLIT` segments come before its risky one (trouble comes quickly), else `long`.
Needs the PaSBench dev logs and MiniLM; about 2-4 minutes on one core. The committed JSON is what the
experiment and the shipped escalation policy read, so they run without either.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
from tqdm import tqdm

DATA_FILE = Path(__file__).resolve().parent / "data" / "gate_sensors.json"
GRID = 20
CONDITIONS = ("as_written", "in_sample", "perturbed", "degraded", "spurious", "spurious_acts")
SPURIOUS = {"spurious": "environment", "spurious_acts": "behavior"}   # condition -> the field that gains words
SPURIOUS_RATE = 0.2   # per segment: as often as the default perturbation drops a segment (fixed a priori)


def _perturb_configs() -> dict:
    from training.safety.perturb import PerturbConfig

    return {"perturbed": PerturbConfig(),
            "degraded": PerturbConfig(drop_segment=0.4, swap_adjacent=0.3, drop_final_sentence=0.2,
                                      paraphrase_sentence=0.4),
            "spurious": PerturbConfig(), "spurious_acts": PerturbConfig()}


HOME_WORDS = ("kitchen", "bedroom", "living room", "bathroom", "restroom", "toilet", "balcony", "home", "study",
              "dining", "entryway", "apartment", "craft room", "storage", "garage", "laundry", "hallway",
              "dormitory", "homestay", "backyard", "nursery")
SETTINGS = ("home", "away")
PACES = ("short", "long")
PACE_SPLIT = 5   # the dev logs' median number of segments before the risky one (fixed before measuring)


def pace_of(k: int) -> str:
    """`short` when trouble comes within `PACE_SPLIT` segments (k segments before the risky one), else `long`."""
    return "short" if k < PACE_SPLIT else "long"


def settings_of(segments: list) -> list[str]:
    """`home` or `away` per segment, by keywords of its location; an unnamed location keeps the last one."""
    out, last = [], "home"
    for s in segments:
        loc = s.location.strip().lower()
        if loc:
            last = "home" if any(w in loc for w in HOME_WORDS) else "away"
        out.append(last)
    return out


def hazard_sentences(scenarios, field: str = "environment") -> list[tuple[int, str]]:
    """(log index, sentence): per log, the sentence of its risky segment's `field` (environment: a hazard
    object in view; behavior: the risky act) that best matches its trigger."""
    from models.safety.logparse import parse_log
    from training.safety.replay import evidence_sentence, risky_segment

    out = []
    for i, sc in enumerate(scenarios):
        segments = parse_log(sc.log)
        seg = segments[risky_segment(segments, sc.trigger)]
        sentence = evidence_sentence(replace(seg, behavior=getattr(seg, field)), sc.trigger)
        if sentence:
            out.append((i, sentence))
    return out


def add_spurious(segments: list, pool: list[tuple[int, str]], log_index: int, seed: int,
                 rate: float = SPURIOUS_RATE, field: str = "environment") -> list:
    """Each segment's `field` gains, with chance `rate`, a sentence of another log from `pool`; the same
    segment of the same log and seed gains the same sentence in every prefix."""
    others = [t for j, t in pool if j != log_index]
    out = []
    for i, s in enumerate(segments):
        rng = random.Random(f"spurious:{seed}:{log_index}:{i}")
        if rng.random() < rate:
            s = replace(s, **{field: f"{getattr(s, field)} {rng.choice(others)}".strip()})
        out.append(s)
    return out


def measure(logs_file: str | None = None, runs: int = 2, limit: int | None = None,
            progress: bool = True) -> dict:
    """Held-out gate probabilities binned per condition and class (0 = risk-free, 1 = risky)."""
    from models.safety.knowledge import load_rules, load_scenarios
    from models.safety.logparse import parse_log
    from models.safety.retrieval import BACKGROUND_FILE, RuleRetriever
    from models.safety.risk_gate import RiskGate, gate_features, log_fold
    from models.sentences import SentenceEncoder
    from training.safety.perturb import perturb_log
    from training.safety.replay import evidence_sentence, risky_segment

    everything = load_scenarios(logs_file)
    scenarios = everything[:limit]
    retriever = RuleRetriever(load_rules(), SentenceEncoder(), background=BACKGROUND_FILE)
    gate = RiskGate.load()
    configs = _perturb_configs()
    pools = {name: hazard_sentences(everything, f) for name, f in SPURIOUS.items()}
    scores: dict[str, list[list[float]]] = {c: [[], []] for c in CONDITIONS}
    folds: dict[str, list[list[int]]] = {c: [[], []] for c in CONDITIONS}
    places: dict[str, list[list[str]]] = {c: [[], []] for c in CONDITIONS}
    paces: dict[str, list[list[str]]] = {c: [[], []] for c in CONDITIONS}

    def score(segs, log: str, full: bool = False) -> float:
        a = retriever.analyse([s.text() for s in segs])
        return float(gate.full(gate_features(a)[None])[0]) if full else gate.probability(a, log)

    for n, sc in enumerate(tqdm(scenarios, desc="gate sensors", unit="log", file=sys.stderr, disable=not progress)):
        before = {c: (len(scores[c][0]), len(scores[c][1])) for c in CONDITIONS}
        segments = parse_log(sc.log)
        k = risky_segment(segments, sc.trigger)
        keep = evidence_sentence(segments[-1], sc.trigger) if k == len(segments) - 1 else None
        scores["as_written"][1].append(score(segments, sc.log))
        scores["as_written"][0] += [score(segments[:j], sc.log) for j in range(1, k + 1)]
        scores["in_sample"][1].append(score(segments, sc.log, full=True))
        scores["in_sample"][0] += [score(segments[:j], sc.log, full=True) for j in range(1, k + 1)]
        for name, cfg in configs.items():
            kept = keep if name != "degraded" else None
            for seed in range(runs):
                segs = add_spurious(segments, pools[name], n, seed, field=SPURIOUS[name]) if name in SPURIOUS else segments
                scores[name][1].append(score(perturb_log(segs, seed, cfg, keep=kept), sc.log))
                scores[name][0] += [score(perturb_log(segs[:j], seed, cfg), sc.log) for j in range(1, k + 1)]
        fold = log_fold(sc.log, len(gate.folds))
        where = settings_of(segments)
        for c in CONDITIONS:
            for cls in (0, 1):
                folds[c][cls] += [fold] * (len(scores[c][cls]) - before[c][cls])
            copies = len(scores[c][1]) - before[c][1]  # risk-free prefixes 1..k, then the next run's
            places[c][0] += where[:k] * copies
            places[c][1] += [where[k]] * copies
            paces[c][0] += [pace_of(k)] * (k * copies)
            paces[c][1] += [pace_of(k)] * copies
    edges = np.linspace(0.0, 1.0, GRID + 1)

    def histogram(values) -> list[int]:
        return np.histogram(np.clip(values, 0, 1), edges)[0].astype(int).tolist()

    hist = {c: {cls: histogram(v) for cls, v in zip(("safe", "risky"), scores[c], strict=True)} for c in CONDITIONS}
    by_fold = {c: [{cls: histogram(np.asarray(v)[np.asarray(folds[c][i]) == f])
                    for i, (cls, v) in enumerate(zip(("safe", "risky"), scores[c], strict=True))}
                   for f in range(len(gate.folds))] for c in CONDITIONS}

    def split(labels: dict, names: tuple[str, ...]) -> dict:
        return {c: {w: {cls: histogram(np.asarray(v)[np.asarray(labels[c][i]) == w])
                        for i, (cls, v) in enumerate(zip(("safe", "risky"), scores[c], strict=True))}
                    for w in names} for c in CONDITIONS}

    return {"grid": GRID, "logs": len(scenarios), "runs": runs, "conditions": hist, "folds": by_fold,
            "settings": split(places, SETTINGS), "pace": split(paces, PACES),
            "mean": {c: {cls: float(np.mean(v)) for cls, v in zip(("safe", "risky"), scores[c], strict=True)}
                     for c in CONDITIONS}}


def load(path: str | Path = DATA_FILE) -> dict:
    """The committed measurement (see `measure`)."""
    return json.loads(Path(path).read_text())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m training.methods.pomdp.gate_sensors", description=__doc__.splitlines()[0])
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
