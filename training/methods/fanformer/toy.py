"""The learning-efficiency test of FANformer's Fig. 1a in miniature: fit a periodic signal of time.

Every token of a sequence is one timestamp t in [0, 40) (sorted, as frames arrive) and its target is the
periodic signal y(t) = sin(2 pi t / 10) + 0.5 sin(4 pi t / 10). Two causal encoders that differ only in
their attention (stock vs FANformer, ``models.layers.fan``) train for the same number of steps on the
same batches; the test MSE on fresh sequences from the same range says which learned the period faster.

The first layer must see the raw timestamp: a LayerNorm in front of it would normalise the single
number away, so the encoders are post-norm (as PreFM's are).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from models.layers.fan import FANEncoderLayer

T_MAX = 40.0
PERIOD = 10.0


def periodic_target(t: torch.Tensor) -> torch.Tensor:
    """y(t) = sin(2 pi t / P) + 0.5 sin(4 pi t / P): a fundamental and its first harmonic."""
    w = 2 * math.pi * t / PERIOD
    return torch.sin(w) + 0.5 * torch.sin(2 * w)


def sample_batch(gen: torch.Generator, batch: int, length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(timestamps (B, L, 1) sorted per sequence, targets (B, L, 1))."""
    t = torch.sort(torch.rand(batch, length, generator=gen) * T_MAX, dim=1).values.unsqueeze(-1)
    return t, periodic_target(t)


class TimeEncoder(nn.Module):
    """timestamp -> Linear -> causal encoder (stock or FANformer layers) -> Linear -> value."""

    def __init__(self, attention: str, d_model: int = 32, heads: int = 4, ff: int = 128, layers: int = 2) -> None:
        super().__init__()
        self.embed = nn.Linear(1, d_model)
        if attention == "fan":
            layer: nn.TransformerEncoderLayer = FANEncoderLayer(d_model, heads, ff, dropout=0.0)
        elif attention == "plain":
            layer = nn.TransformerEncoderLayer(d_model, heads, ff, dropout=0.0, batch_first=True)
        else:
            raise ValueError(f"attention must be 'plain' or 'fan', got {attention!r}")
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, 1)

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        mask = nn.Transformer.generate_square_subsequent_mask(t.shape[1])
        return self.head(self.encoder(self.embed(t), mask=mask, is_causal=True))


@dataclass
class ToyRun:
    """One training run: test MSE after every ``eval_every`` steps (``curve``) and at the end."""

    attention: str
    ff: int
    seed: int
    params: int
    curve: dict[int, float]

    @property
    def test_mse(self) -> float:
        return self.curve[max(self.curve)]


def _test_mse(model: nn.Module, t: torch.Tensor, y: torch.Tensor) -> float:
    model.eval()
    with torch.no_grad():
        mse = nn.functional.mse_loss(model(t), y).item()
    model.train()
    return mse


def train_toy(attention: str, seed: int, ff: int = 128, steps: int = 300, batch: int = 32, length: int = 16,
              lr: float = 3e-3, eval_every: int = 100, test_sequences: int = 512,
              progress: Callable | None = None) -> ToyRun:
    """Train one encoder with Adam; the data stream depends only on ``seed``, so every variant sees the
    same batches and the same test set."""
    torch.manual_seed(seed)
    model = TimeEncoder(attention, ff=ff)
    data = torch.Generator().manual_seed(10_000 + seed)
    t_test, y_test = sample_batch(torch.Generator().manual_seed(20_000 + seed), test_sequences, length)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    steps_iter = range(1, steps + 1)
    if progress is not None:
        steps_iter = progress(steps_iter, desc=f"{attention} ff {ff} seed {seed}", total=steps)
    curve: dict[int, float] = {}
    for step in steps_iter:
        t, y = sample_batch(data, batch, length)
        loss = nn.functional.mse_loss(model(t), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % eval_every == 0 or step == steps:
            curve[step] = _test_mse(model, t_test, y_test)
    params = sum(p.numel() for p in model.parameters())
    return ToyRun(attention, ff, seed, params, curve)


def matched_ff(d_model: int = 32, ff: int = 128, layers: int = 2) -> int:
    """The feed-forward width that gives the stock encoder as many parameters as the FAN one, so that a
    FAN gain cannot be put down to its extra weights."""
    fan = TimeEncoder("fan", d_model=d_model, ff=ff, layers=layers)
    plain = TimeEncoder("plain", d_model=d_model, ff=ff, layers=layers)
    extra = sum(p.numel() for p in fan.parameters()) - sum(p.numel() for p in plain.parameters())
    per_unit = layers * (2 * d_model + 1)  # one more hidden unit: a row and a column of the FFN, one bias
    return ff + round(extra / per_unit)
