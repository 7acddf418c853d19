"""A small raster-order autoregressive model over token grids (the Janus-Pro / LlamaGen role in AR-RAG).

Input [BOS, t_0, ..., t_{N-2}], output logits for t_0 ... t_{N-1}: the hidden state at sequence index j
predicts token j. The forward pass is split at one layer's attention output (`prefix` / `suffix`) because
that is where FAiD adds its retrieval features; with the base frozen, the prefix can be computed once.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F


class CausalBlock(nn.Module):
    def __init__(self, width: int, heads: int, dropout: float) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))
        self.drop = nn.Dropout(dropout)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        b, n, w = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(out.transpose(1, 2).reshape(b, n, w))

    def attend(self, h: torch.Tensor) -> torch.Tensor:
        return h + self.drop(self.attention(self.ln1(h)))

    def feed(self, h: torch.Tensor) -> torch.Tensor:
        return h + self.drop(self.mlp(self.ln2(h)))


class TokenGPT(nn.Module):
    """Decoder-only transformer over `grid` x `grid` code grids with a `vocab`-code codebook."""

    def __init__(self, vocab: int, grid: int = 12, width: int = 64, depth: int = 2, heads: int = 4,
                 dropout: float = 0.1) -> None:
        super().__init__()
        self.vocab, self.grid, self.width, self.depth = vocab, grid, width, depth
        self.embed = nn.Embedding(vocab + 1, width)  # index `vocab` is BOS
        self.pos = nn.Parameter(torch.randn(grid * grid, width) * 0.02)
        self.blocks = nn.ModuleList(CausalBlock(width, heads, dropout) for _ in range(depth))
        self.ln_f = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab)

    def prefix(self, codes: torch.Tensor, layer: int) -> torch.Tensor:
        """Hidden states (B, N, width) right after the attention of block `layer`."""
        bos = torch.full((codes.shape[0], 1), self.vocab, dtype=torch.long)
        h = self.embed(torch.cat([bos, codes[:, :-1]], dim=1)) + self.pos
        for block in self.blocks[:layer]:
            h = block.feed(block.attend(h))
        return self.blocks[layer].attend(h)

    def suffix(self, h: torch.Tensor, layer: int) -> torch.Tensor:
        """Logits from the hidden states after the attention of block `layer`."""
        h = self.blocks[layer].feed(h)
        for block in self.blocks[layer + 1:]:
            h = block.feed(block.attend(h))
        return self.head(self.ln_f(h))

    def forward(self, codes: torch.Tensor) -> torch.Tensor:
        """codes (B, N) -> logits (B, N, vocab) for every position, teacher-forced."""
        return self.suffix(self.prefix(codes, 0), 0)


def fit(model: nn.Module, params: list[nn.Parameter], batches: Callable[[torch.Generator], tuple],
        loss_fn: Callable[..., torch.Tensor], steps: int, lr: float, seed: int = 0, progress=None,
        desc: str = "train") -> None:
    """AdamW with cosine decay on `params` only; `batches(gen)` draws the arguments of `loss_fn`."""
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(steps, 1))
    model.train()
    loop = range(steps) if progress is None else progress(range(steps), desc=desc, total=steps)
    for _ in loop:
        loss = loss_fn(*batches(gen))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    model.eval()


def nll_per_token(probs: torch.Tensor, targets: torch.Tensor) -> float:
    """Mean negative log-likelihood (nats) of `targets` (any shape) under `probs` (..., vocab)."""
    p = probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1).clamp_min(1e-12)
    return float(-p.log().mean())


def flat(codes: np.ndarray) -> torch.Tensor:
    """(n, H, W) numpy codes -> (n, H*W) long tensor in raster order."""
    return torch.tensor(codes.reshape(codes.shape[0], -1), dtype=torch.long)
