"""A character-level language-modelling corpus built from Python's own standard-library source.

It ships with every Python, so the experiment needs no download, and code has enough structure (indentation,
keywords, identifiers) for a small transformer's validation loss to move visibly within a few hundred steps.
Training and validation come from two modules (`MODULES`, the last 10 % is validation, where every setting was
chosen); the held-out test split is the source of two other modules (`TEST_MODULES`), split by source file as
the project splits by recording, and scored once per shipped setting.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import inspect
import textwrap
from dataclasses import dataclass

import numpy as np
import torch

MODULES = (collections, argparse)
TEST_MODULES = (textwrap, contextlib)  # held out: never trained on, never used to choose a setting


def stdlib_text(modules: tuple = MODULES) -> str:
    """The source of a few stdlib modules, joined; identical for a given Python version."""
    return "\n".join(inspect.getsource(m) for m in modules)


@dataclass
class CharCorpus:
    """Token ids of a text with its character vocabulary: training and validation parts of one text, and an
    optional held-out test text (characters outside the vocabulary dropped)."""

    train: np.ndarray
    val: np.ndarray
    chars: str
    test: np.ndarray | None = None

    @classmethod
    def from_text(cls, text: str, val_fraction: float = 0.1, test_text: str | None = None) -> CharCorpus:
        chars = "".join(sorted(set(text)))
        lookup = {c: i for i, c in enumerate(chars)}
        ids = np.fromiter((lookup[c] for c in text), dtype=np.int64, count=len(text))
        cut = int(len(ids) * (1.0 - val_fraction))
        test = None if test_text is None else np.array([lookup[c] for c in test_text if c in lookup], dtype=np.int64)
        return cls(train=ids[:cut], val=ids[cut:], chars=chars, test=test)

    @property
    def vocab(self) -> int:
        return len(self.chars)

    def batch(self, rng: np.random.Generator, batch: int, context: int,
              split: str = "train") -> tuple[torch.Tensor, torch.Tensor]:
        """`batch` random windows: inputs and next-character targets, both (batch, context)."""
        ids = self.train if split == "train" else self.val
        starts = rng.integers(0, len(ids) - context - 1, size=batch)
        x = np.stack([ids[s:s + context] for s in starts])
        y = np.stack([ids[s + 1:s + context + 1] for s in starts])
        return torch.from_numpy(x), torch.from_numpy(y)

    def val_batches(self, batch: int, context: int, limit: int,
                    split: str = "val") -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Fixed, non-overlapping windows of the validation (or test) split, the same for every model compared."""
        ids = self.val if split == "val" else self.test
        if ids is None:
            raise ValueError("this corpus has no test split")
        n = min(limit * batch, (len(ids) - 1) // context)
        starts = np.arange(n) * context
        out = []
        for i in range(0, n - batch + 1, batch):
            s = starts[i:i + batch]
            out.append((torch.from_numpy(np.stack([ids[j:j + context] for j in s])),
                        torch.from_numpy(np.stack([ids[j + 1:j + context + 1] for j in s]))))
        return out
