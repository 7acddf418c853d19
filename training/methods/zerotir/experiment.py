"""ZeroTIR in miniature: outcome-reward RL teaches a small policy to answer stream questions with code.

The policy starts as a "base model" that can write programs but rarely does. GRPO with a 0/1 answer reward
trains it on questions about synthetic stream logs; every program it writes runs in the isolated executor.
Held-out questions at each checkpoint give accuracy and code-use frequency per training step (the paper's
agent RL scaling law), next to the same RL without the tool. A hostile-program suite checks the executor.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable, Iterator
from typing import Any

import torch
from scipy.stats import spearmanr

from training.methods.runner import Experiment, Result
from training.methods.zerotir.executor import ExecResult, Executor
from training.methods.zerotir.grpo import CachedRunner, Config, evaluate, restore, train
from training.methods.zerotir.hostile import sandbox_report
from training.methods.zerotir.rollout import Context
from training.methods.zerotir.tasks import make_episodes

TRAIN_QUESTIONS, TEST_QUESTIONS, TEST_SAMPLES = 256, 128, 4


def no_tool(calls: list[tuple[Context, str, str]]) -> list[ExecResult]:
    """The runner of the no-tool baseline, which never writes a program."""
    if calls:
        raise RuntimeError("the no-tool policy tried to run code")
    return []


def _curve(name: str, checkpoints: list[dict[str, Any]], test_set: list, run: Callable, config: Config,
           seed: int, progress: Callable[..., Iterator], keep: tuple[int, ...] | None = None) -> list[dict]:
    rows = []
    chosen = [c for c in checkpoints if keep is None or c["step"] in keep]
    for ck in progress(chosen, desc=f"evaluating {name}", total=len(chosen)):
        metrics = evaluate(restore(ck["state_dict"], config), test_set, run, config, TEST_SAMPLES, seed)
        rows.append({"run": name, "step": ck["step"], **{k: round(v, 4) for k, v in metrics.items()}})
    return rows


def _rho(rows: list[dict], key: str) -> float:
    return float(spearmanr([r["step"] for r in rows], [r[key] for r in rows]).statistic)


def _sandbox_note(row: dict) -> str:
    verdict = "clean" if row["clean"] else "NOT CLEAN"
    alive = "survived" if row["survived"] else "DID NOT SURVIVE"
    strays = f", {row['strays']} stray processes" if row["strays"] > 0 else ""
    return f"sandbox: {row['program']} -> {row['outcome']} ({row['seconds']} s; {verdict}, {alive}{strays})"


SEEDS = (0, 1, 2)
FULL_WINDOW = (10_000, 10_000)  # every event and line "in the head": no context limit for the no-tool arm


def _final(name: str, train_set: list, test_set: list, run: Callable, config: Config, seed: int,
           progress: Callable[..., Iterator]) -> dict:
    """Train one arm and evaluate its last checkpoint only (the ablations need no curve)."""
    _, checkpoints = train(train_set, run, config, seed, progress)
    return {**_curve(name, checkpoints[-1:], test_set, run, config, seed, progress)[0], "seed": seed}


def _mean_sd(rows: list[dict], key: str) -> tuple[float, float]:
    vals = [r[key] for r in rows]
    return statistics.fmean(vals), statistics.stdev(vals)


def run(seed: int = 0, progress: Callable[..., Iterator] = lambda it, **_: iter(it)) -> Result:
    """Seeds 0, 1, 2 (fixed; `seed` is the runner's and is not used): ZeroTIR's curve, the no-tool arm with
    the default context window and with the whole log, and two ablations of what could build the curve in:
    a neutral code logit at the start, and a cost per call."""
    torch.set_num_threads(1)
    config = Config()
    arms = {"no-tool RL": dataclasses.replace(config, allow_code=False),
            "no-tool RL, whole log in context": dataclasses.replace(config, allow_code=False, window=FULL_WINDOW),
            "ZeroTIR, neutral code logit (0)": dataclasses.replace(config, code_bias=0.0),
            "ZeroTIR, 0.1 reward per call charged": dataclasses.replace(config, call_cost=0.1)}
    curves, finals = [], []
    with Executor() as executor:
        runner = CachedRunner(executor)
        for s in SEEDS:
            train_set, test_set = make_episodes(TRAIN_QUESTIONS, 1000 + s), make_episodes(TEST_QUESTIONS, 2000 + s)
            _, checkpoints = train(train_set, runner, config, s, progress)
            curves.append([{**r, "seed": s} for r in _curve("ZeroTIR", checkpoints, test_set, runner, config, s,
                                                            progress)])
            for name, cfg in arms.items():
                finals.append(_final(name, train_set, test_set, no_tool if not cfg.allow_code else runner, cfg, s,
                                     progress))
        isolation = dict(executor.info)
    hostile, _ = sandbox_report()

    first = [c[0] for c in curves]
    last = [c[-1] for c in curves]
    rho_acc, rho_code = [_rho(c, "accuracy") for c in curves], [_rho(c, "code_use") for c in curves]
    summary = []
    for name, rows in [("ZeroTIR", last)] + [(n, [r for r in finals if r["run"] == n]) for n in arms]:
        row = {"run": name, "step": rows[0]["step"], "seed": "mean +- sd"}
        for key in ("accuracy", "code_use", "calls", "length"):
            row[key], row[key + "_sd"] = _mean_sd(rows, key)
        summary.append(row)
    by = {r["run"]: r for r in summary}
    tool, base, full = by["ZeroTIR"], by["no-tool RL"], by["no-tool RL, whole log in context"]
    clean = sum(r["clean"] for r in hostile)
    survived = sum(r["survived"] and r["strays"] <= 0 for r in hostile)
    figures = {"initial_accuracy": statistics.fmean(r["accuracy"] for r in first),
               "final_accuracy": tool["accuracy"], "final_accuracy_sd": tool["accuracy_sd"],
               "initial_code_use": statistics.fmean(r["code_use"] for r in first), "final_code_use": tool["code_use"],
               "spearman_accuracy_min": min(rho_acc), "spearman_code_use_min": min(rho_code),
               "no_tool_final_accuracy": base["accuracy"], "no_tool_final_accuracy_sd": base["accuracy_sd"],
               "no_tool_whole_log_accuracy": full["accuracy"], "no_tool_whole_log_accuracy_sd": full["accuracy_sd"],
               **{
                   f"{k}_{m}": by[n][m] for k, n in (("neutral_logit", "ZeroTIR, neutral code logit (0)"),
                                                     ("call_cost", "ZeroTIR, 0.1 reward per call charged"))
                   for m in ("accuracy", "code_use", "calls")},
               "programs_executed": float(runner.executed), "programs_reused": float(runner.reused),
               "hostile_clean": clean / len(hostile), "hostile_survived": survived / len(hostile)}
    checks = {
        "accuracy rises with training steps on every seed (Spearman >= 0.6, +0.4 overall)":
            all(r >= 0.6 for r in rho_acc) and all(b["accuracy"] - a["accuracy"] >= 0.4 for a, b in zip(first, last, strict=True)),
        "code use rises with training steps on every seed (second half >= step 0 + 0.5)":
            all(all(r["code_use"] >= c[0]["code_use"] + 0.5 for r in c[-len(c) // 2:]) for c in curves),
        "RL with the tool beats RL without it when the log exceeds the context, beyond the seed spread":
            tool["accuracy"] - tool["accuracy_sd"] > base["accuracy"] + base["accuracy_sd"] + 0.1,
        "every hostile program gets a clean one-line error in time": clean == len(hostile),
        "the executor survives every hostile program (next program runs, no stray process)":
            survived == len(hostile),
    }
    notes = [_sandbox_note(r) for r in hostile]
    notes.append(f"isolation: network/PID namespaces {isolation.get('namespaces')}, uid {isolation.get('uid')}, "
                 f"interfaces {isolation.get('interfaces')}, audit hook {isolation.get('audit_hook')}")
    notes.append(f"{runner.executed} programs ran in the sandbox; {runner.reused} repeats reused their result")
    notes.append(f"seeds {list(SEEDS)}; {TRAIN_QUESTIONS} training and {TEST_QUESTIONS} held-out questions on distinct "
                 f"synthetic streams per seed; figures over {TEST_SAMPLES} sampled responses per held-out question")
    notes.append(f"with the whole log in context the no-tool arm reaches {full['accuracy']:.3f} +- {full['accuracy_sd']:.3f}: "
                 "the tool's advantage here is the context limit, by construction of the task")
    rows = summary + [r for c in curves for r in c] + finals
    return Result(rows=rows, figures=figures, checks=checks, notes=notes, seeds=len(SEEDS))


EXPERIMENT = Experiment(
    name="zerotir",
    title="ZeroTIR: tool-integrated reasoning learned from outcome reward",
    paper="Mai, Xu et al., Agent RL Scaling Law: Spontaneous Code Execution for Mathematical Problem "
          "Solving, NeurIPS 2025 (arXiv 2505.07773)",
    claim="Under outcome-reward RL from a base policy, accuracy and code-use frequency rise with training "
          "steps, and tool use beats RL without the tool when the data exceeds the context (three seeds); the "
          "executor survives hostile programs with clean errors.",
    run=run,
)
