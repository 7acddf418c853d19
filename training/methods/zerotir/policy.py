"""The policy: a tiny recurrent model that reads a question's intent and writes a tool-using response.

It plays the language model of ZeroTIR at a scale a CPU trains in seconds. A response is a token sequence:
`think` (answer in the head) or `code` (write a program for the sandbox), then the program's two code
tokens; after a `code` program the sandbox's output comes back as one observation token, and the policy
either `answer`s with it or writes another program. Observation tokens are fed in but never sampled, so
they carry no loss (the paper's environment tokens with action mask 0).

Like the paper's base model, the untrained policy can write programs but rarely does: the `code`
decision starts with a logit bias of -2. Nothing tells it which program answers which question.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from models import checkpoints
from training.methods.zerotir.programs import AGGS, FILTERS
from training.methods.zerotir.tasks import INTENT_VOCAB

DECISIONS = ("think", "code", "answer")
ACTIONS: tuple[str, ...] = (*DECISIONS, *(f"f:{f}" for f in FILTERS), *(f"a:{a}" for a in AGGS))
OBSERVATIONS: tuple[str, ...] = ("out:number", "out:text", "out:nothing", "out:error")
INPUTS: tuple[str, ...] = ("bos", *ACTIONS, *OBSERVATIONS)
ACTION_INDEX = {a: i for i, a in enumerate(ACTIONS)}
INPUT_INDEX = {t: i for i, t in enumerate(INPUTS)}


def action_mask(names: tuple[str, ...]) -> torch.Tensor:
    """A boolean row over ACTIONS allowing exactly `names`."""
    mask = torch.zeros(len(ACTIONS), dtype=torch.bool)
    mask[[ACTION_INDEX[n] for n in names]] = True
    return mask


class Policy(nn.Module):
    """Bag-of-words question encoder -> initial state of a GRU cell over response tokens -> action logits."""

    def __init__(self, hidden: int = 32, code_bias: float = -2.0, vocab: tuple[str, ...] = INTENT_VOCAB):
        super().__init__()
        self.vocab = tuple(vocab)
        self.word_index = {w: i for i, w in enumerate(self.vocab)}
        self.hidden = hidden
        self.encode = nn.Linear(len(self.vocab), hidden)
        self.embed = nn.Embedding(len(INPUTS), hidden)
        self.cell = nn.GRUCell(hidden, hidden)
        self.head = nn.Linear(hidden, len(ACTIONS))
        self.vote = nn.Linear(len(self.vocab), len(ACTIONS), bias=False)
        with torch.no_grad():
            self.vote.weight.zero_()
            self.head.weight.mul_(0.1)
            self.head.bias.zero_()
            self.head.bias[ACTION_INDEX["code"]] = code_bias

    def bag(self, intents: list[tuple[str, ...]]) -> torch.Tensor:
        """Multi-hot rows over the intent vocabulary; words outside it are ignored."""
        rows = torch.zeros(len(intents), len(self.vocab))
        for i, words in enumerate(intents):
            for w in words:
                if w in self.word_index:
                    rows[i, self.word_index[w]] = 1.0
        return rows

    def start(self, intents: list[tuple[str, ...]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Initial GRU state and the question's direct vote on every action (a skip path from the words)."""
        bag = self.bag(intents)
        return torch.tanh(self.encode(bag)), self.vote(bag)

    def step(self, state: torch.Tensor, inputs: torch.Tensor, vote: torch.Tensor) -> tuple[torch.Tensor,
                                                                                            torch.Tensor]:
        """Consume one input token per row; return the new state and the next action's logits."""
        state = self.cell(self.embed(inputs), state)
        return state, self.head(state) + vote

    def save(self, path: str | Path) -> None:
        checkpoints.write({"hidden": self.hidden, "vocab": list(self.vocab), "actions": list(ACTIONS),
                           "inputs": list(INPUTS), "state_dict": self.state_dict()}, path)

    @classmethod
    def load(cls, path: str | Path) -> Policy:
        blob = checkpoints.read(path, what="tool-policy checkpoint")
        if tuple(blob["actions"]) != ACTIONS or tuple(blob["inputs"]) != INPUTS:
            raise ValueError(f"{path}: the checkpoint's token set differs from this code's")
        policy = cls(hidden=int(blob["hidden"]), vocab=tuple(blob["vocab"]))
        policy.load_state_dict(blob["state_dict"])
        return policy.eval()
