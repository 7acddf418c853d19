"""ZeroTIR in miniature: outcome-reward RL teaches a small policy to answer stream questions with code.

The policy starts as a "base model" that can write programs but rarely does. GRPO with a 0/1 answer reward
trains it on questions about synthetic stream logs; every program it writes runs in the isolated executor.
Held-out questions at each checkpoint give accuracy and code-use frequency per training step (the paper's
agent RL scaling law), next to the same RL without the tool. A hostile-program suite checks the executor.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import torch
from scipy.stats import spearmanr

from training.experiment import Experiment, Result
from training.zerotir.executor import ExecResult, Executor
from training.zerotir.grpo import CachedRunner, Config, evaluate, restore, train
from training.zerotir.hostile import sandbox_report
from training.zerotir.rollout import Context
from training.zerotir.tasks import make_episodes

TRAIN_QUESTIONS, TEST_QUESTIONS, TEST_SAMPLES = 256, 128, 4
NO_TOOL_STEPS = (0, 30, 60)


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


def run(seed: int = 0, progress: Callable[..., Iterator] = lambda it, **_: iter(it)) -> Result:
    torch.set_num_threads(1)
    config = Config()
    train_set = make_episodes(TRAIN_QUESTIONS, 1000 + seed)
    test_set = make_episodes(TEST_QUESTIONS, 2000 + seed)
    with Executor() as executor:
        runner = CachedRunner(executor)
        _, checkpoints = train(train_set, runner, config, seed, progress)
        curve = _curve("ZeroTIR", checkpoints, test_set, runner, config, seed, progress)
        isolation = dict(executor.info)
    baseline_config = dataclasses.replace(config, allow_code=False)
    _, base_checkpoints = train(train_set, no_tool, baseline_config, seed, progress)
    baseline = _curve("no-tool RL", base_checkpoints, test_set, no_tool, baseline_config, seed, progress,
                      keep=NO_TOOL_STEPS)
    hostile, _ = sandbox_report()

    first, last = curve[0], curve[-1]
    rho_acc, rho_code = _rho(curve, "accuracy"), _rho(curve, "code_use")
    clean = sum(r["clean"] for r in hostile)
    survived = sum(r["survived"] and r["strays"] <= 0 for r in hostile)
    figures = {"initial_accuracy": first["accuracy"], "final_accuracy": last["accuracy"],
               "initial_code_use": first["code_use"], "final_code_use": last["code_use"],
               "spearman_accuracy": rho_acc, "spearman_code_use": rho_code,
               "initial_length": first["length"], "final_length": last["length"],
               "spearman_length": _rho(curve, "length"),
               "no_tool_final_accuracy": baseline[-1]["accuracy"],
               "programs_executed": float(runner.executed), "programs_reused": float(runner.reused),
               "hostile_clean": clean / len(hostile), "hostile_survived": survived / len(hostile)}
    checks = {
        "accuracy rises with training steps (Spearman >= 0.6, +0.4 overall)":
            rho_acc >= 0.6 and last["accuracy"] - first["accuracy"] >= 0.4,
        "code use rises with training steps (every checkpoint of the second half >= step 0 + 0.5)":
            all(r["code_use"] >= first["code_use"] + 0.5 for r in curve[-len(curve) // 2:]),
        "RL with the tool beats RL without it (final accuracy +0.1)":
            last["accuracy"] >= baseline[-1]["accuracy"] + 0.1,
        "every hostile program gets a clean one-line error in time": clean == len(hostile),
        "the executor survives every hostile program (next program runs, no stray process)":
            survived == len(hostile),
    }
    notes = [_sandbox_note(r) for r in hostile]
    notes.append(f"isolation: network/PID namespaces {isolation.get('namespaces')}, uid {isolation.get('uid')}, "
                 f"interfaces {isolation.get('interfaces')}, audit hook {isolation.get('audit_hook')}")
    notes.append(f"{runner.executed} programs ran in the sandbox during training and evaluation; "
                 f"{runner.reused} repeats (same program over the same stored rows) reused their result")
    notes.append(f"{TRAIN_QUESTIONS} training and {TEST_QUESTIONS} held-out questions on distinct synthetic "
                 f"streams; accuracy and code use are over {TEST_SAMPLES} sampled responses per held-out question")
    return Result(rows=curve + baseline, figures=figures, checks=checks, notes=notes)


EXPERIMENT = Experiment(
    name="zerotir",
    title="ZeroTIR: tool-integrated reasoning learned from outcome reward",
    paper="Mai, Xu et al., Agent RL Scaling Law: Spontaneous Code Execution for Mathematical Problem "
          "Solving, NeurIPS 2025 (arXiv 2505.07773)",
    claim="Under outcome-reward RL from a base policy, accuracy and code-use frequency rise with training "
          "steps, and tool use beats RL without the tool; the executor survives hostile programs with clean errors.",
    run=run,
)
