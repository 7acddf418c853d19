"""`foresight train <method>` and `foresight eval training`: run the method packages' experiments.

train: one experiment, with a progress bar; prints its table and writes JSON (default
`data/training/<method>.json`). eval training: every experiment (or `--only`), then one line per method
with its headline figures and whether the claim's direction held. Exit 0 when every direction held, 1
when one did not, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from training.methods.runner import format_result, format_table, load, method_names, progress_bar, write_json


def train_method_main(name: str, argv: list[str]) -> int:
    exp = load(name)
    p = argparse.ArgumentParser(prog=f"foresight train {name}", description=f"{exp.title}: {exp.claim}")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--out", help=f"JSON result (default data/training/{name}.json)")
    p.add_argument("--json", action="store_true", help="print the JSON result instead of the table")
    a = p.parse_args(argv)
    t0 = time.perf_counter()
    result = exp.run(seed=a.seed, progress=progress_bar(sys.stderr.isatty() and not a.json))
    out = Path(a.out or f"data/training/{name}.json")
    write_json(out, exp, result, a.seed)
    if a.json:
        print(out.read_text(), end="")
    else:
        print(format_result(exp, result))
        print(f"\n{time.perf_counter() - t0:.1f} s; result written to {out}")
    return 0 if result.held else 1


def _only(text: str | None) -> list[str]:
    names = method_names()
    if not text:
        return names
    chosen = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in chosen if n not in names]
    if bad or not chosen:
        raise ValueError(f"unknown method(s) {', '.join(bad) or text!r}; known: {', '.join(names)}")
    return chosen


def eval_training_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="foresight eval training",
                                description="Run every training method's experiment and report whether "
                                            "each paper's claimed direction held in miniature.")
    p.add_argument("--only", metavar="M1,M2", help=f"only these methods ({', '.join(method_names())})")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    a = p.parse_args(argv)
    try:
        names = _only(a.only)
    except ValueError as exc:
        print(f"foresight: error: {exc}", file=sys.stderr)
        return 2
    report, rows = {}, []
    for name in progress_bar(sys.stderr.isatty() and not a.json)(names, desc="methods"):
        exp = load(name)
        t0 = time.perf_counter()
        result = exp.run(seed=a.seed, progress=progress_bar(False))
        seconds = time.perf_counter() - t0
        report[name] = {"title": exp.title, "paper": exp.paper, "claim": exp.claim, "seconds": round(seconds, 1),
                        **result.to_json()}
        figures = ", ".join(f"{k}={v:.4g}" for k, v in result.figures.items())
        rows.append({"method": name, "held": "held" if result.held else "NOT HELD", "s": round(seconds, 1),
                     "figures": figures})
    if a.json:
        print(json.dumps(report, indent=2, allow_nan=True))
    else:
        print(format_table(rows))
    return 0 if all(r["held"] for r in report.values()) else 1
