"""Outcome-reward RL of the policy (GRPO with a group baseline), and evaluation of its checkpoints.

ZeroTIR trains from the base model with no supervised tool demonstrations: reward is 1 when the final
answer matches the reference and 0 otherwise (no reward for using code, no format shaping), each question
is sampled G times, and a response's advantage is its reward standardised within its group. The loss is
the advantage times the log-probability of the policy's own tokens only; KL is 0, as in the paper's runs.
One addition: an entropy bonus, without which a question kind can lock onto a wrong program for good.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from training.methods.zerotir.executor import ExecResult, Executor
from training.methods.zerotir.policy import Policy
from training.methods.zerotir.programs import render
from training.methods.zerotir.rollout import Context, Trajectory, rollout
from training.methods.zerotir.tasks import Episode, is_correct, link


@dataclass
class Config:
    """Sizes of one training run (defaults: the experiment's)."""

    steps: int = 60
    batch: int = 16
    group: int = 16
    lr: float = 0.05
    entropy: float = 0.1
    max_calls: int = 2
    window: tuple[int, int] = (6, 4)
    checkpoints: tuple[int, ...] = (0, 1, 2, 3, 4, 5, 10, 20, 30, 40, 50, 60)
    hidden: int = 32
    code_bias: float = -2.0
    allow_code: bool = True
    scale_by_std: bool = True
    call_cost: float = 0.0  # subtracted from the training reward per tool call (0: calls are free, as in the paper)


class CachedRunner:
    """Runs programs in the sandbox, remembering results: a program over the same stored rows gives the
    same output, so a repeat within a group or across steps need not run again. Counts both."""

    def __init__(self, executor: Executor):
        self.executor = executor
        self.cache: dict[tuple[int, str, str, str, str], ExecResult] = {}
        self.executed = 0
        self.reused = 0

    def __call__(self, calls: list[tuple[Context, str, str]]) -> list[ExecResult]:
        keys = [(id(c.log), c.label, c.word, f, a) for c, f, a in calls]
        fresh = list(dict.fromkeys(k for k in keys if k not in self.cache))
        self.reused += len(keys) - len(fresh)
        if fresh:
            contexts = {key: c for key, (c, _, _) in zip(keys, calls, strict=True)}
            programs = [(render(k[3], k[4]), {**contexts[k].log.inputs(), "LABEL": k[1], "WORD": k[2]})
                        for k in fresh]
            self.cache.update(zip(fresh, self.executor.run_many(programs), strict=True))
            self.executed += len(fresh)
        return [self.cache[k] for k in keys]


def prepare(episodes: list[Episode]) -> tuple[list[tuple[str, ...]], list[Context]]:
    """Link each question to its stream (the same linking the deployed agent does)."""
    links = [link(e.question, e.log.labels) for e in episodes]
    return [lk.intent for lk in links], [Context(e.log, lk.label, lk.word) for e, lk in zip(episodes, links,
                                                                                              strict=True)]


def _rewards(trajs: list[Trajectory], episodes: list[Episode]) -> torch.Tensor:
    return torch.tensor([float(is_correct(t.answer, e.answer)) for t, e in zip(trajs, episodes, strict=True)])


def grpo_loss(trajs: list[Trajectory], rewards: torch.Tensor, group: int, entropy: float = 0.0,
              scale_by_std: bool = True) -> torch.Tensor:
    """-mean(A * log pi(response)) - entropy * mean(H), A = (r - mean_group) / (std_group + eps).
    A group whose answers all score the same teaches nothing; the entropy term keeps the policy sampling
    other programs for such questions instead of repeating one wrong program for ever."""
    r = rewards.view(-1, group)
    adv = r - r.mean(1, keepdim=True)
    if scale_by_std:
        adv = adv / (r.std(1, keepdim=True, unbiased=False) + 1e-6)
    adv = adv.view(-1)
    logp = torch.stack([t.logprob for t in trajs])
    spread = torch.stack([t.entropy for t in trajs])
    return -(adv * logp).mean() - entropy * spread.mean()


def evaluate(policy: Policy, episodes: list[Episode], run: Callable[..., ExecResult], config: Config,
             samples: int = 4, seed: int = 0) -> dict[str, float]:
    """Sampled responses to held-out questions: accuracy, code-use frequency, calls, errors, length."""
    intents, contexts = prepare(episodes)
    gen = torch.Generator().manual_seed(seed)
    trajs: list[Trajectory] = []
    rewards: list[float] = []
    with torch.no_grad():
        for _ in range(samples):
            batch = rollout(policy, intents, contexts, run, max_calls=config.max_calls, window=config.window,
                            allow_code=config.allow_code, generator=gen)
            trajs += batch
            rewards += _rewards(batch, episodes).tolist()
    calls = sum(t.calls for t in trajs)
    return {"accuracy": sum(rewards) / len(rewards),
            "code_use": sum(t.calls > 0 for t in trajs) / len(trajs),
            "calls": calls / len(trajs),
            "code_errors": sum(t.errors for t in trajs) / calls if calls else 0.0,
            "length": sum(t.length for t in trajs) / len(trajs)}


def train(train_set: list[Episode], run: Callable[..., ExecResult], config: Config, seed: int,
          progress: Callable[..., Iterator] = lambda it, **_: iter(it)) -> tuple[Policy, list[dict[str, Any]]]:
    """GRPO on `train_set`. Returns the final policy and the checkpoints [{step, state_dict, reward}]
    (reward: the mean training reward of that step's batch)."""
    torch.manual_seed(seed)
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    policy = Policy(hidden=config.hidden, code_bias=config.code_bias)
    opt = torch.optim.Adam(policy.parameters(), lr=config.lr)
    checkpoints = [{"step": 0, "state_dict": copy.deepcopy(policy.state_dict()), "reward": float("nan")}]
    steps: Iterable[int] = progress(range(1, config.steps + 1), desc="GRPO steps", total=config.steps)
    for step in steps:
        questions = rng.sample(train_set, config.batch)
        episodes = [e for e in questions for _ in range(config.group)]
        intents, contexts = prepare(episodes)
        trajs = rollout(policy, intents, contexts, run, max_calls=config.max_calls, window=config.window,
                        allow_code=config.allow_code, generator=gen)
        rewards = _rewards(trajs, episodes) - config.call_cost * torch.tensor([float(t.calls) for t in trajs])
        loss = grpo_loss(trajs, rewards, config.group, config.entropy, config.scale_by_std)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step in config.checkpoints or step == config.steps:
            checkpoints.append({"step": step, "state_dict": copy.deepcopy(policy.state_dict()),
                                "reward": float(rewards.mean())})
    return policy.eval(), checkpoints


def restore(state_dict: dict[str, torch.Tensor], config: Config) -> Policy:
    policy = Policy(hidden=config.hidden, code_bias=config.code_bias)
    policy.load_state_dict(state_dict)
    return policy.eval()
