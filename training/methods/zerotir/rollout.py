"""Multi-turn rollouts: the policy writes, the sandbox runs, and the output returns as an environment token.

This is ZeroTIR's rollout loop (generate until a code block closes, execute it, append the output, go on
until an answer or the tool-call budget) for a batch of questions at once. Each row keeps a queue of input
tokens; an action is sampled only when a row's queue is empty, so the observation token that follows a
program is consumed without being sampled: it shapes later decisions but carries no log-probability.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from training.methods.zerotir.executor import ExecResult
from training.methods.zerotir.policy import ACTIONS, INPUT_INDEX, Policy, action_mask
from training.methods.zerotir.programs import AGGS, FILTERS, render, think
from training.methods.zerotir.streamlog import StreamLog

TOO_LONG = "The output of the code execution is too long, please check your code."
MASKS = {"open": action_mask(("think", "code")), "open_no_code": action_mask(("think",)),
         "filter": action_mask(tuple(f"f:{f}" for f in FILTERS)),
         "agg": action_mask(tuple(f"a:{a}" for a in AGGS)),
         "decide": action_mask(("answer", "code")), "decide_last": action_mask(("answer",))}


@dataclass(frozen=True)
class Context:
    """What a question is about: the stored log and the label and word the question names."""

    log: StreamLog
    label: str
    word: str


# Runs a batch of programs, each (context, filter, aggregate), and returns their results in order.
Runner = Callable[[list[tuple[Context, str, str]]], list[ExecResult]]


@dataclass
class Trajectory:
    """One sampled response: its tokens, the readable turns, the final answer and the tool statistics."""

    tokens: list[str] = field(default_factory=list)
    turns: list[str] = field(default_factory=list)
    answer: str | None = None
    calls: int = 0
    errors: int = 0
    logprob: torch.Tensor | None = None
    entropy: torch.Tensor | None = None

    @property
    def length(self) -> int:
        """Response length in tokens, environment tokens included (as the paper counts it)."""
        return len(self.tokens)


def observe(result: ExecResult) -> tuple[str, str]:
    """The observation token and text a program's result becomes."""
    if not result.ok:
        return "out:error", f"error: {result.error}"
    if result.truncated:
        return "out:error", TOO_LONG
    text = result.stdout.strip().splitlines()[0].strip() if result.stdout.strip() else ""
    if not text or text.lower() == "nothing":
        return "out:nothing", text or "(no output)"
    try:
        float(text)
    except ValueError:
        return "out:text", text
    return "out:number", text


@dataclass
class _Row:
    """Rollout state of one response."""

    pending: list[str]
    phase: str = "open"
    mode: str = ""
    filter: str = ""
    last_output: str | None = None
    awaiting: str = ""
    done: bool = False


def _advance(row: _Row, traj: Trajectory, action: str, context: Context, window: tuple[int, int]) -> None:
    """Apply a sampled action to a row: move its phase and queue it as the next input. A finished program
    is left in `awaiting` for the batch run."""
    traj.tokens.append(action)
    row.pending.append(action)
    if row.phase == "open":
        row.mode, row.phase = action, "filter"
    elif row.phase == "filter":
        row.filter, row.phase = action[2:], "agg"
    elif row.phase == "agg" and row.mode == "think":
        agg = action[2:]
        traj.answer = think(row.filter, agg, context.log.events, context.log.transcript, context.label,
                            context.word, window)
        traj.turns.append(f"think: {row.filter} -> {agg} over the first {window[0]} events and "
                          f"{window[1]} lines in context")
        traj.turns.append(f"answer: {traj.answer if traj.answer is not None else 'unknown'}")
        row.done = True
    elif row.phase == "agg":
        row.awaiting = action[2:]
    elif action == "answer":
        traj.answer = row.last_output
        traj.turns.append(f"answer: {traj.answer}")
        row.done = True
    else:
        row.phase = "filter"


def _observe(row: _Row, traj: Trajectory, result: ExecResult, max_calls: int) -> None:
    """The sandbox's result enters the context as an environment token (queued, never sampled)."""
    token, text = observe(result)
    traj.calls += 1
    traj.errors += token == "out:error"
    traj.tokens.append(token)
    traj.turns.append(f"```python\n{render(row.filter, row.awaiting)}```")
    traj.turns.append(f"```output\n{text}\n```")
    row.pending.append(token)
    row.last_output, row.awaiting = text, ""
    row.phase = "decide" if traj.calls < max_calls else "decide_last"


def rollout(policy: Policy, intents: list[tuple[str, ...]], contexts: list[Context], run: Runner, *,
            max_calls: int = 2, window: tuple[int, int] = (6, 4), greedy: bool = False,
            allow_code: bool = True, generator: torch.Generator | None = None) -> list[Trajectory]:
    """Sample one response per (intent, context). Log-probabilities keep their graph for the update."""
    n = len(intents)
    rows = [_Row(pending=["bos"]) for _ in range(n)]
    if not allow_code:
        for row in rows:
            row.phase = "open_no_code"
    trajs = [Trajectory() for _ in range(n)]
    state, vote = policy.start(intents)
    picked_rows: list[int] = []
    picked_logps: list[torch.Tensor] = []
    entropies: list[torch.Tensor] = []
    while True:
        active = [i for i, row in enumerate(rows) if not row.done]
        if not active:
            break
        idx = torch.tensor(active)
        inputs = torch.tensor([INPUT_INDEX[rows[i].pending.pop(0)] for i in active])
        new_state, logits = policy.step(state.index_select(0, idx), inputs, vote.index_select(0, idx))
        state = state.index_copy(0, idx, new_state)
        deciding = [k for k, i in enumerate(active) if not rows[i].pending]
        if not deciding:
            continue
        sel = torch.tensor(deciding)
        masks = torch.stack([MASKS[rows[active[k]].phase] for k in deciding])
        logp = torch.log_softmax(logits.index_select(0, sel).masked_fill(~masks, float("-inf")), dim=-1)
        with torch.no_grad():
            choice = (logp.argmax(-1) if greedy else
                      torch.multinomial(logp.exp(), 1, generator=generator).squeeze(1))
        picked_logps.append(logp.gather(1, choice[:, None]).squeeze(1))
        entropies.append(-(logp.exp() * logp.masked_fill(~masks, 0.0)).sum(-1))
        for k, a in zip(deciding, choice.tolist(), strict=True):
            i = active[k]
            picked_rows.append(i)
            if rows[i].phase == "open_no_code":
                rows[i].phase = "open"
            _advance(rows[i], trajs[i], ACTIONS[a], contexts[i], window)
        waiting = [i for i in active if rows[i].awaiting]
        results = run([(contexts[i], rows[i].filter, rows[i].awaiting) for i in waiting])
        for i, result in zip(waiting, results, strict=True):
            _observe(rows[i], trajs[i], result, max_calls)
    where = torch.tensor(picked_rows, dtype=torch.long)
    total = torch.zeros(n).index_add(0, where, torch.cat(picked_logps))
    spread = torch.zeros(n).index_add(0, where, torch.cat(entropies))
    for i, traj in enumerate(trajs):
        traj.logprob, traj.entropy = total[i], spread[i]
    return trajs

