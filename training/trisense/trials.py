"""Summarise val trials of the open-vocabulary grounder (mean ± sd over seeds), so the recipe choice in
docs/grounding.md can be re-read from the results file rather than copied by hand.

    python -m training.trisense.trials docs/results/grounding_v3_tagger_val_trials.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

KEYS = (("R@0.3", lambda r: r.get("r1_iou03")), ("R@0.3 without abstaining", lambda r: r.get("r1_iou03_no_abstain")),
        ("abstention", lambda r: r.get("abstention_accuracy")),
        ("held-out R@0.3", lambda r: r["held_out_concepts"].get("r1_iou03")),
        ("held-out without abstaining", lambda r: r["held_out_concepts"].get("r1_iou03_no_abstain")))


def cell(values: list) -> str:
    """Fractions as percent, mean ± sd over seeds ("–" when no seed has the figure)."""
    vals = [100 * v for v in values if v is not None]
    if not vals:
        return "–"
    return f"{np.mean(vals):.1f}" + (f" ± {np.std(vals):.1f}" if len(vals) > 1 else "")


def table(trials: list[dict], method: str = "trisense") -> str:
    """One markdown row per trial: its setup, recipe, seeds and the connector model's val figures (percent)."""
    lines = ["| # | setup | recipe | seeds | " + " | ".join(k for k, _ in KEYS) + " |",
             "|---|---|---|---|" + "---|" * len(KEYS)]
    for i, t in enumerate(trials):
        rows = [run[t["split"]] for name, run in t["runs"].items() if name.startswith(method + "/")]
        if not rows:
            continue
        cells = [cell([get(r) for r in rows]) for _, get in KEYS]
        lines.append(f"| {i} | {t.get('setup', '')} | {t.get('recipe', '')} | {len(rows)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m training.trisense.trials", description=table.__doc__)
    p.add_argument("results", help="a val-trials JSON with a 'trials' list (generalise attempts plus setup/recipe)")
    p.add_argument("--method", default="trisense", help="which runs to summarise (trisense, equal-weights)")
    args = p.parse_args(argv)
    print(table(json.loads(Path(args.results).read_text())["trials"], args.method))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
