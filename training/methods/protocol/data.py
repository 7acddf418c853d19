"""A character-level language-modelling corpus built from Python's own standard-library source.

It ships with every Python, so the experiment needs no download, and code has enough structure (indentation,
keywords, identifiers) for a small transformer's validation loss to move visibly within a few hundred steps.
"""

from __future__ import annotations

import argparse
import collections
import inspect
from dataclasses import dataclass

import numpy as np
import torch

MODULES = (collections, argparse)


def stdlib_text() -> str:
    """The source of a few stdlib modules, joined; identical for a given Python version."""
    return "\n".join(inspect.getsource(m) for m in MODULES)


@dataclass
class CharCorpus:
    """Token ids of a text with its character vocabulary, split into training and validation halves."""

    train: np.ndarray
    val: np.ndarray
    chars: str

    @classmethod
    def from_text(cls, text: str, val_fraction: float = 0.1) -> CharCorpus:
        chars = "".join(sorted(set(text)))
        lookup = {c: i for i, c in enumerate(chars)}
        ids = np.fromiter((lookup[c] for c in text), dtype=np.int64, count=len(text))
        cut = int(len(ids) * (1.0 - val_fraction))
        return cls(train=ids[:cut], val=ids[cut:], chars=chars)

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

    def val_batches(self, batch: int, context: int, limit: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Fixed, non-overlapping validation windows (the same for every model compared)."""
        n = min(limit * batch, (len(self.val) - 1) // context)
        starts = np.arange(n) * context
        out = []
        for i in range(0, n - batch + 1, batch):
            s = starts[i:i + batch]
            out.append((torch.from_numpy(np.stack([self.val[j:j + context] for j in s])),
                        torch.from_numpy(np.stack([self.val[j + 1:j + context + 1] for j in s]))))
        return out
