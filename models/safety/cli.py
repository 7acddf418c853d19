"""`foresight eval safety [--logs FILE] [--json] [--runs 16] [--threshold X]`: the PaSBench harness."""

from __future__ import annotations

import argparse
import json
import sys

from models.safety.knowledge import load_rules, load_scenarios
from models.safety.monitor import DEFAULT_THRESHOLD, SafetyConfig

KEYS = ("top1", "top5", "accuracy", "potential", "robustness", "false_alarm_rate")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="foresight eval safety",
                                description="Evaluate the safety monitor on PaSBench-format text logs.")
    p.add_argument("--logs", help="PaSBench text-log JSON (default: the development logs)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.add_argument("--runs", type=int, default=16, help="perturbed runs per log (default 16)")
    p.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD,
                   help=f"retrieval score needed to warn (default {DEFAULT_THRESHOLD})")
    p.add_argument("--no-embeddings", action="store_true", help="TF-IDF only (no MiniLM)")
    p.add_argument("--no-replay", action="store_true", help="skip the lead-time replay")
    return p


def eval_main(argv: list[str]) -> int:
    """Run the harness; 0 on success, 2 on bad input (one line on stderr)."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if args.runs < 1:
        print("error: --runs must be at least 1", file=sys.stderr)
        return 2
    try:
        scenarios = load_scenarios(args.logs)
        from models.safety.logparse import parse_log
        for i, sc in enumerate(scenarios):
            try:
                parse_log(sc.log)
            except ValueError as exc:
                raise ValueError(f"log {i}: {exc}") from exc
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from models.safety.evaluate import lead_times, metrics, score_scenarios
    from models.safety.retrieval import BACKGROUND_FILE, RuleRetriever

    config = SafetyConfig(threshold=args.threshold, use_embeddings=not args.no_embeddings)
    embedder = None
    if config.use_embeddings:
        from models.safety.embed import SentenceEmbedder
        embedder = SentenceEmbedder()
    retriever = RuleRetriever(load_rules(), embedder, recency_decay=config.recency_decay,
                              embed_weight=config.embed_weight, background=BACKGROUND_FILE)
    result = metrics(score_scenarios(scenarios, retriever, runs=args.runs), args.threshold)
    if not args.no_replay:
        result.update(lead_times(scenarios, retriever, config))
    if args.json:
        print(json.dumps(result))
    else:
        print(f"PaSBench safety eval: {result['logs']} logs x {result['runs']} runs, threshold {args.threshold}")
        for k, v in result.items():
            if k not in ("logs", "runs", "threshold"):
                print(f"  {k:28s} {v:.3f}" if isinstance(v, float) else f"  {k:28s} {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(eval_main(sys.argv[1:]))
