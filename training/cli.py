"""`foresight train <method>` and `foresight eval training`: run the method packages' experiments.

train: one experiment, with a progress bar; prints its table and writes JSON (default
`data/training/<method>.json`). eval training: every experiment (or `--only`), then one line per method
with its headline figures (mean +- sd over the experiment's seeds where it has several) and whether the
claim's direction held; with `--json` that line is one JSON object (JSON Lines), so a consumer can read the
methods as they finish. Exit 0 when every direction held, 1 when one did not, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from pipelines.sinks.exporters import prepare_output
from training.methods.runner import format_result, format_table, load, method_names, progress_bar, write_json


def train_method_main(name: str, argv: list[str]) -> int:
    exp = load(name)
    p = argparse.ArgumentParser(prog=f"foresight train {name}", description=f"{exp.title}: {exp.claim}")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--out", help=f"JSON result (default data/training/{name}.json)")
    p.add_argument("--json", action="store_true", help="print the JSON result instead of the table")
    a = p.parse_args(argv)
    out = prepare_output(f"data/training/{name}.json" if a.out is None else a.out)  # before the run, not after
    t0 = time.perf_counter()
    result = exp.run(seed=a.seed, progress=progress_bar(sys.stderr.isatty() and not a.json))
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
    p.add_argument("--json", action="store_true",
                   help="print one JSON object per method (JSON Lines) instead of the table")
    a = p.parse_args(argv)
    try:
        names = _only(a.only)
    except ValueError as exc:
        print(f"foresight: error: {exc}", file=sys.stderr)
        return 2
    held, rows = [], []
    for name in progress_bar(sys.stderr.isatty() and not a.json)(names, desc="methods"):
        exp = load(name)
        t0 = time.perf_counter()
        result = exp.run(seed=a.seed, progress=progress_bar(False))
        seconds = round(time.perf_counter() - t0, 1)
        held.append(result.held)
        spread = result.spread()
        if a.json:
            print(json.dumps({"method": name, "title": exp.title, "held": result.held, "seconds": seconds,
                              "seeds": result.seeds, "figures": spread, "checks": result.checks},
                             allow_nan=True), flush=True)
            continue
        figures = ", ".join(f"{k}={v['mean']:.4g}" + (f"±{v['sd']:.2g}" if v["sd"] is not None else "")
                            for k, v in spread.items())
        rows.append({"method": name, "held": "held" if result.held else "NOT HELD", "seeds": result.seeds,
                     "s": seconds, "figures": figures})
    if not a.json:
        print(format_table(rows))
    return 0 if all(held) else 1
