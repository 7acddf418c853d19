"""Offline evaluation on PaSBench text logs: rule retrieval, the 16-run protocol, false alarms, lead time.

A run of a scenario is correct when the monitor both warns (top score >= threshold) and names the
violated rule (so its `risk_reason` explains the risk): PaSBench's identification + explanation.
Runs differ by `perturb_log` seeds. With a judge (tier c), every decision also asks it: its chosen
rule replaces retrieval's top-1 and its "no risk" silences the run; on a judge failure retrieval's
answer stays. Accuracy = mean over runs and scenarios, potential = share of scenarios with at least
one correct run, robustness = share with all runs correct. False alarms are
counted on each log cut just before its risky segment (logs whose risk is in the first segment have no
such cut). Lead time comes from replaying each unperturbed log through a fresh monitor.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np
from tqdm import tqdm

from models.safety.judge import ChatJudge, JudgeError
from models.safety.knowledge import SEVERITY_WEIGHT, Scenario, normalise_rule_text
from models.safety.logparse import Segment, parse_log, render_log
from models.safety.monitor import SafetyConfig, SafetyMonitor
from models.safety.retrieval import RuleRetriever
from models.safety.risk_gate import RiskGate
from training.safety.perturb import perturb_log
from training.safety.replay import evidence_sentence, replay, risky_segment


@dataclass
class Scored:
    """Per-scenario raw results, kept so thresholds can be swept without re-ranking.

    `score`, `run_score` and `cut_score` are the warn decision's value: the risk gate's held-out
    probability when a gate is used, else the top retrieval score.
    """

    gold: int
    severity: float
    top5: list[int]
    score: float
    run_top1: list[int]
    run_score: list[float]
    cut_score: float | None
    judge_calls: int = 0
    judge_failures: int = 0


def score_scenarios(scenarios: list[Scenario], retriever: RuleRetriever, runs: int = 16,
                    gate: RiskGate | None = None, keep_evidence: bool = True,
                    progress: bool = True, judge: ChatJudge | None = None, judge_k: int = 5) -> list[Scored]:
    """Rank every scenario once as written, `runs` times perturbed and once cut before its risk.

    keep_evidence: perturbations never drop the final segment's sentence that shows the triggering
    behaviour (False reproduces the first protocol, where a run could lose the risk itself).
    judge: tier (c); it sees each (perturbed) log and retrieval's top `judge_k` rules.
    """
    if runs < 1:
        raise ValueError(f"runs must be >= 1, got {runs}")
    index = {normalise_rule_text(r.knowledge): r for r in retriever.rules}
    out = []
    for sc in tqdm(scenarios, desc="safety eval", unit="log", file=sys.stderr, disable=not progress):
        segments = parse_log(sc.log)
        rule = index.get(normalise_rule_text(sc.knowledge))
        calls = [0, 0]  # judge calls, failures

        def decide(segs: list[Segment], k: int = 1, log: str = sc.log,
                   calls: list[int] = calls) -> tuple[list[int], float]:
            a = retriever.analyse([s.text() for s in segs])
            top = [int(j) for j in np.argsort(-a.total)[:max(k, judge_k if judge is not None else 1)]]
            value = gate.probability(a, log) if gate is not None else float(a.total[top[0]])
            if judge is not None:
                calls[0] += 1
                try:
                    chosen, _ = judge.verify(render_log(segs), retriever.candidates(a, judge_k))
                except JudgeError:
                    calls[1] += 1
                else:
                    if chosen is None:
                        return [-1, *top][:k], float("-inf")  # "no risk": silent at any threshold
                    top = [chosen.rule.id, *(j for j in top if j != chosen.rule.id)]
            return top[:k], value

        top5, score = decide(segments, 5)
        k = risky_segment(segments, sc.trigger)
        keep = evidence_sentence(segments[-1], sc.trigger) if keep_evidence and k == len(segments) - 1 else None
        run_top1, run_score = [], []
        for seed in range(runs):
            top, value = decide(perturb_log(segments, seed, keep=keep))
            run_top1.append(top[0])
            run_score.append(value)
        out.append(Scored(gold=rule.id if rule else -1,
                          severity=SEVERITY_WEIGHT[rule.severity] if rule else 1.0,
                          top5=top5, score=score, run_top1=run_top1, run_score=run_score,
                          cut_score=decide(segments[:k])[1] if k > 0 else None,
                          judge_calls=calls[0], judge_failures=calls[1]))
    return out


def metrics(scored: list[Scored], threshold: float) -> dict:
    """The harness's numbers at one threshold (all fractions)."""
    if not scored:
        raise ValueError("no scored scenarios")
    runs = np.array([[t == s.gold and sc >= threshold for t, sc in zip(s.run_top1, s.run_score, strict=True)]
                     for s in scored])
    caught = np.array([s.top5[0] == s.gold and s.score >= threshold for s in scored])
    weights = np.array([s.severity for s in scored])
    cuts = [s.cut_score for s in scored if s.cut_score is not None]
    return {
        "top1": float(np.mean([s.top5[0] == s.gold for s in scored])),
        "top5": float(np.mean([s.gold in s.top5 for s in scored])),
        "accuracy": float(runs.mean()),
        "potential": float(runs.any(1).mean()),
        "robustness": float(runs.all(1).mean()),
        "false_alarm_rate": float(np.mean([c >= threshold for c in cuts])) if cuts else 0.0,
        "recall": float(caught.mean()),
        "severity_weighted_recall": float((weights * caught).sum() / weights.sum()),
        "threshold": float(threshold),
        "logs": len(scored),
        "runs": int(runs.shape[1]),
        "false_alarm_logs": len(cuts),
        "judge_calls": sum(s.judge_calls for s in scored),
        "judge_failures": sum(s.judge_failures for s in scored),
    }


def lead_times(scenarios: list[Scenario], retriever: RuleRetriever, config: SafetyConfig,
               gate: RiskGate | None = None, progress: bool = True) -> dict:
    """Replay each log through a fresh monitor (held-out gate); lead time of the first correct alert."""
    index = {normalise_rule_text(r.knowledge): r.knowledge for r in retriever.rules}
    leads, first_wrong = [], 0
    for sc in tqdm(scenarios, desc="safety replay", unit="log", file=sys.stderr, disable=not progress):
        segments: list[Segment] = parse_log(sc.log)
        mon = SafetyMonitor(config, retriever=retriever, gate=gate.held_out(sc.log) if gate is not None else None)
        res = replay(mon, segments, sc.trigger)
        gold = index.get(normalise_rule_text(sc.knowledge))
        right = [a for a in res.alerts if a.rule == gold]
        if res.alerts and res.alerts[0].rule != gold:
            first_wrong += 1
        if right:
            leads.append(right[0].lead_time_s)
    return {"replay_warned": len(leads) / len(scenarios),
            "replay_warned_before_risk": float(np.mean([x > 0 for x in leads])) if leads else 0.0,
            "replay_median_lead_time_s": float(np.median(leads)) if leads else 0.0,
            "replay_first_alert_wrong": first_wrong / len(scenarios)}
