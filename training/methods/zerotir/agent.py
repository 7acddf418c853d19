"""Ask a stored stream questions: the trained policy writes programs and the sandbox runs them on the rows.

    python -m training.methods.zerotir.agent RESULT.json "how many times did the phone ring?" ["when was ..."]
    python -m training.methods.zerotir.agent foresight.db --job JOB_ID "what was said after the alarm?"
    python -m training.methods.zerotir.agent --retrain [--policy PATH]     # train and save a policy (seconds)

Each answer prints with its turns (the programs written and their outputs), so a user can check the work.
The rows come from a result JSON or from the SQLite store through `streamlog`; programs only ever see
those rows, inside the isolated executor. Exit status 0, 2 on bad input, 1 on an internal failure.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from training.methods.zerotir.executor import Executor
from training.methods.zerotir.grpo import CachedRunner, Config, evaluate, train
from training.methods.zerotir.policy import Policy
from training.methods.zerotir.rollout import Context, rollout
from training.methods.zerotir.streamlog import StreamLog, load
from training.methods.zerotir.tasks import link, make_episodes

DEFAULT_POLICY = Path(__file__).resolve().parent / "checkpoints" / "policy.pt"


@dataclass(frozen=True)
class Answer:
    """An answer with what it rests on: the label and word the question was linked to, and the turns."""

    question: str
    answer: str | None
    label: str
    word: str
    calls: int
    turns: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class StreamAgent:
    """A policy plus a sandbox. Greedy decoding, so the same question over the same rows gives the same
    programs and answer. Close it (or use `with`) to stop the sandbox worker."""

    def __init__(self, policy: Policy | None = None, executor: Executor | None = None,
                 config: Config | None = None):
        self.policy = policy if policy is not None else Policy.load(DEFAULT_POLICY)
        self.config = config or Config()
        self._owns_executor = executor is None
        self.executor = executor if executor is not None else Executor()
        self.runner = CachedRunner(self.executor)

    def ask(self, log: StreamLog, question: str) -> Answer:
        linked = link(question, log.labels)
        with torch.no_grad():
            traj = rollout(self.policy, [linked.intent], [Context(log, linked.label, linked.word)], self.runner,
                           max_calls=self.config.max_calls, window=self.config.window, greedy=True)[0]
        return Answer(question, traj.answer, linked.label, linked.word, traj.calls, tuple(traj.turns))

    def close(self) -> None:
        if self._owns_executor:
            self.executor.close()

    def __enter__(self) -> StreamAgent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def train_policy(path: str | Path = DEFAULT_POLICY, seed: int = 0) -> dict[str, float]:
    """Train a policy with the experiment's recipe and data, save it, and return its held-out figures."""
    torch.set_num_threads(1)
    config = Config()
    with Executor() as executor:
        runner = CachedRunner(executor)
        policy, _ = train(make_episodes(256, 1000 + seed), runner, config, seed)
        figures = evaluate(policy, make_episodes(128, 2000 + seed), runner, config, samples=4, seed=seed)
    policy.save(path)
    return figures


def _print(answer: Answer) -> None:
    print(f"Q: {answer.question}")
    if answer.label or answer.word:
        print(f"   (LABEL = {answer.label!r}, WORD = {answer.word!r})")
    for turn in answer.turns[:-1]:
        print(turn)
    print(f"A: {answer.answer if answer.answer is not None else 'unknown'}\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m training.methods.zerotir.agent",
                                description="Answer questions about a stored stream by running programs over "
                                            "its events and transcript in an isolated sandbox.")
    p.add_argument("source", nargs="?", help="a result JSON, or a SQLite store (.db/.sqlite) with --job")
    p.add_argument("questions", nargs="*", help="questions, each one argument")
    p.add_argument("--job", help="the job whose rows to read from a store")
    p.add_argument("--policy", default=str(DEFAULT_POLICY), help="policy checkpoint (default: the shipped one)")
    p.add_argument("--json", action="store_true", help="print the answers as JSON")
    p.add_argument("--retrain", action="store_true", help="train a policy and save it to --policy, then exit")
    p.add_argument("--seed", type=int, default=0, help="seed for --retrain")
    a = p.parse_args(argv)
    if a.retrain:
        figures = train_policy(a.policy, a.seed)
        print(f"policy written to {a.policy}; held-out: " + ", ".join(f"{k}={v:.3f}" for k, v in figures.items()))
        return 0
    if not a.source or not a.questions:
        print("error: give a source and at least one question", file=sys.stderr)
        return 2
    try:
        log = load(a.source, a.job)
        policy = Policy.load(a.policy)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    with StreamAgent(policy) as agent:
        answers = [agent.ask(log, q) for q in a.questions]
    if a.json:
        print(json.dumps([ans.to_json() for ans in answers], indent=2))
    else:
        for ans in answers:
            _print(ans)
    return 0


if __name__ == "__main__":
    sys.exit(main())
