"""A small pre-norm decoder-only transformer, cut into pipeline stages.

`mode="full"` is the ordinary model. `mode="ssn"` is the Subspace Network: the embedding and every block
before the last stage write into span(U) (attention output projection and MLP down projection are
`SubspaceLinear`), so every stage boundary is exactly compressible; the last stage's blocks stay full rank,
as in the authors' reference code. Each stage is built from (config, mode, index) with its own seed, so a
Ray worker and the driver build identical weights without sending any.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from training.methods.protocol.subspace import FullEmbedding, Subspace, SubspaceEmbedding, SubspaceLinear

MODES = ("full", "ssn")


@dataclass(frozen=True)
class ModelConfig:
    vocab: int
    d: int = 64
    k: int = 2
    heads: int = 4
    layers: int = 4
    stages: int = 4
    context: int = 32
    seed: int = 0
    match_params: bool = True  # SSN: give the parameters freed by the confined projections to the MLP width
    tail: int = 0  # blocks of the last (full-rank) stage; 0: layers / stages, like every other stage

    def __post_init__(self) -> None:
        rest = self.layers - self.last_layers
        if (self.stages < 2 or not 0 < self.last_layers < self.layers or rest % (self.stages - 1)
                or self.d % self.heads or not 0 < self.k < self.d or self.vocab > 1 << 16):
            raise ValueError("layers must split evenly into the stages before the last (at least 2 stages), heads "
                             "must divide d, 0 < k < d, and token ids must fit the wire's uint16")

    @property
    def last_layers(self) -> int:
        return self.tail or self.layers // self.stages

    def stage_layers(self, index: int) -> range:
        """The blocks stage `index` holds."""
        per = (self.layers - self.last_layers) // (self.stages - 1)
        return range(self.layers - self.last_layers, self.layers) if index == self.stages - 1 else \
            range(index * per, (index + 1) * per)


def rotary(x: torch.Tensor) -> torch.Tensor:
    """Rotary position encoding of (batch, heads, time, head_dim) queries or keys: position lives in attention,
    not in the residual stream, so no stage needs to send or rebuild a position embedding."""
    t, half = x.shape[-2], x.shape[-1] // 2
    freq = 10000.0 ** (-torch.arange(half, dtype=torch.float32) / half)
    angle = torch.arange(t, dtype=torch.float32)[:, None] * freq[None, :]
    cos, sin = angle.cos(), angle.sin()
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


def mlp_width(config: ModelConfig, confined: bool) -> int:
    """4d, or for a confined block with `match_params` 4d plus the hidden units the confined projections free:
    the full block's out and down projections hold 5d(d+1) weights, the confined ones 5(dk+k), and each extra
    hidden unit costs d + 1 + k (as the authors' reference gives the freed parameters to the MLP)."""
    d, k = config.d, config.k
    if not confined or not config.match_params:
        return 4 * d
    return 4 * d + round(5 * (d * (d + 1) - (d * k + k)) / (d + 1 + k))


class Block(nn.Module):
    """x + attn(LN(x)) then x + mlp(LN(x)); the two branch outputs go through `out` layers that may be confined."""

    def __init__(self, d: int, heads: int, hidden: int, out: Callable[[int], nn.Module]):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.attn_out = out(d)
        self.up = nn.Linear(d, hidden)
        self.down = out(hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(rotary(q), rotary(k), v, is_causal=True).transpose(1, 2).reshape(b, t, d)
        x = x + self.attn_out(a)
        return x + self.down(F.gelu(self.up(self.norm2(x))))


class Stage(nn.Module):
    """The blocks `config.stage_layers(index)`; the first stage embeds tokens, the last one predicts them."""

    def __init__(self, config: ModelConfig, mode: str, index: int):
        super().__init__()
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        c = config
        self.index, self.last = index, index == c.stages - 1
        self.subspace = Subspace(c.d, c.k, c.vocab, c.seed) if mode == "ssn" else None
        confined = self.subspace is not None and not self.last

        def out(fan_in: int) -> nn.Module:
            return SubspaceLinear(fan_in, self.subspace) if confined else nn.Linear(fan_in, c.d)

        with torch.random.fork_rng():  # the stage's initial weights depend on (seed, index) only
            torch.manual_seed(c.seed * 1000 + index)
            self.embed: nn.Module | None = None
            if index == 0:
                self.embed = (SubspaceEmbedding(c.vocab, self.subspace) if self.subspace is not None
                              else FullEmbedding(c.vocab, c.d))
            hidden = mlp_width(c, confined)
            self.blocks = nn.ModuleList(Block(c.d, c.heads, hidden, out) for _ in c.stage_layers(index))
            self.norm = nn.LayerNorm(c.d) if self.last else None
            self.head = nn.Linear(c.d, c.vocab) if self.last else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Token ids (first stage) or the residual stream in; the residual stream or logits (last stage) out."""
        if self.embed is not None:
            x = self.embed(x)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x)) if self.last else x


Boundary = Callable[[int, torch.Tensor, torch.Tensor], torch.Tensor]


class StagedModel(nn.Module):
    """All stages in one process: the reference the Ray pipeline must match, and the evaluation model.

    `boundary(i, x, tokens)`, if given, replaces the residual stream after stage i (e.g. a lossy projection).
    """

    def __init__(self, config: ModelConfig, mode: str):
        super().__init__()
        self.config, self.mode = config, mode
        self.stages = nn.ModuleList(Stage(config, mode, i) for i in range(config.stages))

    def forward(self, tokens: torch.Tensor, boundary: Boundary | None = None) -> torch.Tensor:
        x = tokens
        for i, stage in enumerate(self.stages):
            x = stage(x)
            if boundary is not None and not stage.last:
                x = boundary(i, x, tokens)
        return x

    def loss(self, tokens: torch.Tensor, targets: torch.Tensor, boundary: Boundary | None = None) -> torch.Tensor:
        logits = self(tokens, boundary)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
