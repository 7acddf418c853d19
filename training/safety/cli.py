"""`foresight eval safety [--logs FILE] [--json] [--runs 16] [--limit N] [--threshold X] [--sweep]`: the PaSBench harness."""

from __future__ import annotations

import argparse
import json
import sys

from models.safety.knowledge import load_rules, load_scenarios
from models.safety.monitor import GATE_THRESHOLD, SCORE_THRESHOLD, SafetyConfig

KEYS = ("top1", "top5", "accuracy", "potential", "robustness", "false_alarm_rate")
SWEEP = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="foresight eval safety",
                                description="Evaluate the safety monitor on PaSBench-format text logs.")
    p.add_argument("--logs", help="PaSBench text-log JSON (default: the development logs)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.add_argument("--runs", type=int, default=16, help="perturbed runs per log (default 16)")
    p.add_argument("--limit", type=int, help="only the first N logs (quick iterations)")
    p.add_argument("--threshold", type=float, help=f"risk-gate probability needed to warn (default {GATE_THRESHOLD}); "
                                                   f"retrieval score without the gate (default {SCORE_THRESHOLD})")
    p.add_argument("--sweep", action="store_true", help="also print the metrics at several thresholds")
    p.add_argument("--no-embeddings", action="store_true", help="TF-IDF only (no MiniLM, no risk gate)")
    p.add_argument("--no-gate", action="store_true", help="warn on the retrieval score instead of the risk gate")
    p.add_argument("--drop-evidence", action="store_true",
                   help="let perturbations drop the sentence showing the risky act (first protocol)")
    p.add_argument("--no-replay", action="store_true", help="skip the lead-time replay")
    p.add_argument("--judge-url", help="tier (c): an OpenAI-compatible endpoint that confirms one of the top-5 "
                                       "rules or says 'no risk' (one call per log, run and cut)")
    p.add_argument("--judge-model", default="default", help="model name sent to the judge endpoint")
    p.add_argument("--judge-timeout", type=float, default=30.0, help="seconds per judge call (default 30)")
    return p


def eval_main(argv: list[str]) -> int:
    """Run the harness; 0 on success, 2 on bad input (one line on stderr)."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if args.runs < 1 or (args.limit is not None and args.limit < 1):
        print("error: --runs and --limit must be at least 1", file=sys.stderr)
        return 2
    try:
        scenarios = load_scenarios(args.logs)[:args.limit]
        from models.safety.logparse import parse_log
        for i, sc in enumerate(scenarios):
            try:
                parse_log(sc.log)
            except ValueError as exc:
                raise ValueError(f"log {i}: {exc}") from exc
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from models.safety.retrieval import BACKGROUND_FILE, RuleRetriever
    from training.safety.evaluate import lead_times, metrics, score_scenarios

    config = SafetyConfig(threshold=args.threshold, use_embeddings=not args.no_embeddings,
                          use_gate=not (args.no_gate or args.no_embeddings), judge_url=args.judge_url,
                          judge_model=args.judge_model, judge_timeout_s=args.judge_timeout)
    embedder = None
    if config.use_embeddings:
        from models.sentences import SentenceEncoder
        embedder = SentenceEncoder()
    retriever = RuleRetriever(load_rules(), embedder, recency_decay=config.recency_decay,
                              embed_weight=config.embed_weight, background=BACKGROUND_FILE)
    gate = None
    if config.use_gate:
        from models.safety.risk_gate import RiskGate
        try:
            gate = RiskGate.load()
        except FileNotFoundError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    try:
        judge = config.make_judge()
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    scored = score_scenarios(scenarios, retriever, runs=args.runs, gate=gate, keep_evidence=not args.drop_evidence,
                             judge=judge, judge_k=config.top_k)
    result = metrics(scored, config.threshold)
    result["decision"] = ("risk_gate" if gate is not None else "retrieval_score") + ("+judge" if judge else "")
    if not args.no_replay:
        result.update(lead_times(scenarios, retriever, config, gate=gate))
    if args.sweep:
        result["sweep"] = [metrics(scored, t) for t in (SWEEP if gate is not None else (0.05, 0.1, 0.15, 0.2))]
    if args.json:
        print(json.dumps(result))
    else:
        print(f"PaSBench safety eval: {result['logs']} logs x {result['runs']} runs, "
              f"{result['decision']} threshold {config.threshold}")
        for k, v in result.items():
            if k not in ("logs", "runs", "threshold", "decision", "sweep"):
                print(f"  {k:28s} {v:.3f}" if isinstance(v, float) else f"  {k:28s} {v}")
        for m in result.get("sweep", []):
            print("  sweep " + " ".join(f"{k}={m[k]:.3f}" for k in ("threshold", *KEYS[2:], "recall",
                                                                   "severity_weighted_recall")))
    return 0


if __name__ == "__main__":
    raise SystemExit(eval_main(sys.argv[1:]))
