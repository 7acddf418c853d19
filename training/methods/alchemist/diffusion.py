"""A small caption-conditioned diffusion model: the "pre-trained generative model" Alchemist scores with.

Any fixed-length vector (an 8x8 image, a per-second feature vector) is cut into equal tokens; a two-block
transformer denoises them with self-attention over the tokens and cross-attention to caption tokens, as in
a text-to-image U-Net/DiT. A caption is a multi-hot vector over a label vocabulary; its tokens are the
embeddings of the active labels plus an always-present null token, so an empty caption is the
unconditional model (trained by dropping captions, as classifier-free guidance needs). The cross-attention
outputs are exposed because Alchemist's estimator reads them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F


@dataclass(frozen=True)
class Schedule:
    """DDPM noise schedule (cosine alpha-bar, Nichol & Dhariwal 2021) over `steps` timesteps."""

    steps: int = 50

    def alpha_bar(self) -> torch.Tensor:
        s = 0.008
        t = torch.linspace(0, 1, self.steps + 1)
        f = torch.cos((t + s) / (1 + s) * math.pi / 2) ** 2
        return (f[1:] / f[0]).clamp(1e-4, 0.9999)

    def noised(self, x0: torch.Tensor, t: torch.Tensor, eps: torch.Tensor) -> torch.Tensor:
        ab = self.alpha_bar()[t].unsqueeze(-1)
        return ab.sqrt() * x0 + (1 - ab).sqrt() * eps


def _time_embedding(t: torch.Tensor, width: int, steps: int) -> torch.Tensor:
    half = width // 2
    freqs = torch.exp(-math.log(1000.0) * torch.arange(half) / half)
    angle = (t.float() / steps * 1000.0).unsqueeze(-1) * freqs
    return torch.cat([angle.sin(), angle.cos()], dim=-1)


class Attention(nn.Module):
    """Multi-head scaled dot-product attention (hand-written: nn.MultiheadAttention is slow at this size)."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.q, self.kv, self.o = nn.Linear(width, width), nn.Linear(width, 2 * width), nn.Linear(width, width)

    def forward(self, x: torch.Tensor, ctx: torch.Tensor, pad: torch.Tensor | None = None) -> torch.Tensor:
        b, n, w = x.shape
        q = self.q(x).view(b, n, self.heads, -1).transpose(1, 2)
        k, v = self.kv(ctx).view(b, ctx.shape[1], 2, self.heads, -1).permute(2, 0, 3, 1, 4)
        mask = None if pad is None else ~pad[:, None, None, :]
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.o(out.transpose(1, 2).reshape(b, n, w))


class Block(nn.Module):
    """Self-attention over image tokens, cross-attention to caption tokens, MLP; pre-norm residuals."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.n1, self.n2, self.n3 = nn.LayerNorm(width), nn.LayerNorm(width), nn.LayerNorm(width)
        self.self_attn = Attention(width, heads)
        self.cross_attn = Attention(width, heads)
        self.mlp = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))

    def forward(self, h: torch.Tensor, cap: torch.Tensor, cap_pad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        q = self.n1(h)
        h = h + self.self_attn(q, q)
        cross = self.cross_attn(self.n2(h), cap, cap_pad)
        h = h + cross
        h = h + self.mlp(self.n3(h))
        return h, cross


class Denoiser(nn.Module):
    """epsilon_theta(x_t, t, caption) over vectors of `dim` values cut into tokens of `token_dim`."""

    def __init__(self, dim: int, vocab: int, token_dim: int = 8, width: int = 64, depth: int = 2,
                 heads: int = 4, steps: int = 50) -> None:
        super().__init__()
        self.dim, self.vocab, self.token_dim, self.steps = dim, vocab, token_dim, steps
        self.n_tokens = math.ceil(dim / token_dim)
        self.inp = nn.Linear(token_dim, width)
        self.pos = nn.Parameter(torch.randn(self.n_tokens, width) * 0.02)
        self.time = nn.Sequential(nn.Linear(width, width), nn.SiLU(), nn.Linear(width, width))
        self.words = nn.Embedding(vocab + 1, width)  # index `vocab` is the null token
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(depth))
        self.norm = nn.LayerNorm(width)
        self.out = nn.Linear(width, token_dim)
        self.width = width

    def _tokens(self, x: torch.Tensor) -> torch.Tensor:
        pad = self.n_tokens * self.token_dim - self.dim
        return F.pad(x, (0, pad)).view(x.shape[0], self.n_tokens, self.token_dim)

    def caption_tokens(self, caption: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Every word embedding, with the absent labels masked out; the null token is never masked."""
        b = caption.shape[0]
        words = self.words.weight.unsqueeze(0).expand(b, -1, -1)
        present = torch.cat([caption > 0.5, torch.ones(b, 1, dtype=torch.bool)], dim=1)
        return words, ~present

    def forward(self, x: torch.Tensor, t: torch.Tensor, caption: torch.Tensor,
                return_cross: bool = False) -> torch.Tensor | tuple[torch.Tensor, list[torch.Tensor]]:
        h = self.inp(self._tokens(x)) + self.pos
        h = h + self.time(_time_embedding(t, self.width, self.steps)).unsqueeze(1)
        cap, pad = self.caption_tokens(caption)
        crosses = []
        for block in self.blocks:
            h, cross = block(h, cap, pad)
            crosses.append(cross)
        eps = self.out(self.norm(h)).reshape(x.shape[0], -1)[:, : self.dim]
        return (eps, crosses) if return_cross else eps


def train_denoiser(model: Denoiser, x: torch.Tensor, caption: torch.Tensor, steps: int, lr: float = 2e-3,
                   batch: int = 128, drop_caption: float = 0.1, seed: int = 0, progress=None,
                   desc: str = "diffusion") -> Denoiser:
    """Standard epsilon-prediction DDPM training; captions dropped with probability `drop_caption`."""
    gen = torch.Generator().manual_seed(seed)
    sched = Schedule(model.steps)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    lr_at = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(steps, 1))
    loop = range(steps) if progress is None else progress(range(steps), desc=desc, total=steps)
    model.train()
    for _ in loop:
        idx = torch.randint(0, x.shape[0], (batch,), generator=gen)
        x0, cap = x[idx], caption[idx].clone()
        cap[torch.rand(batch, generator=gen) < drop_caption] = 0
        t = torch.randint(0, model.steps, (batch,), generator=gen)
        eps = torch.randn(x0.shape, generator=gen)
        loss = F.mse_loss(model(sched.noised(x0, t, eps), t, cap), eps)
        opt.zero_grad()
        loss.backward()
        opt.step()
        lr_at.step()
    model.eval()
    return model


@torch.no_grad()
def sample(model: Denoiser, caption: torch.Tensor, guidance: float = 1.0, seed: int = 0) -> torch.Tensor:
    """Ancestral DDPM sampling with classifier-free guidance weight `guidance` (1 = plain conditional)."""
    gen = torch.Generator().manual_seed(seed)
    ab = Schedule(model.steps).alpha_bar()
    ab_prev = torch.cat([torch.ones(1), ab[:-1]])
    x = torch.randn((caption.shape[0], model.dim), generator=gen)
    empty = torch.zeros_like(caption)
    for i in reversed(range(model.steps)):
        t = torch.full((x.shape[0],), i, dtype=torch.long)
        eps = model(x, t, caption)
        if guidance != 1.0:
            eps_u = model(x, t, empty)
            eps = eps_u + guidance * (eps - eps_u)
        x0 = ((x - (1 - ab[i]).sqrt() * eps) / ab[i].sqrt()).clamp(-1.5, 1.5)
        beta = 1 - ab[i] / ab_prev[i]
        mean = (ab_prev[i].sqrt() * beta / (1 - ab[i])) * x0 + ((1 - beta).sqrt() * (1 - ab_prev[i]) / (1 - ab[i])) * x
        noise = torch.randn(x.shape, generator=gen) if i > 0 else torch.zeros_like(x)
        x = mean + (beta * (1 - ab_prev[i]) / (1 - ab[i])).sqrt() * noise
    return x
