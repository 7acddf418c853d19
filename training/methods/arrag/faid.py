"""FAiD: Feature-level Autoregressive retrieval augmentation through multi-scale patch blending.

For every position j to be predicted, each of the K retrieved codes is embedded (the model's own token
embedding, then an aligner and an RMSNorm, as `gen_embed` -> `gen_aligner` -> `retrieval_layernorm`), put
at the centre of the (2h+1)x(2h+1) neighbourhood of the layer's normalised hidden-state map with the future
positions zeroed, and reduced to one vector by convolutions, for hops h = 1, 2; the hops are mixed by
softmax weights, each retrieval is gated by sigmoid(MLP(o_k)), and the mean over k is added to the hidden
state that predicts j. In the official `SmoothPatchBlender` each hop is two stacked convolutions with no
nonlinearity between them; that composition is one linear map of the neighbourhood, so here it is one
masked convolution over the causal context (computed once for all K) plus a linear map of the centre.
Only FAiD's parameters and the output head are trained; the base model stays frozen (no LoRA here), so
the hidden states up to the blender are computed once (`FAiD.prefix`) and reused at every step.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from training.methods.arrag.model import TokenGPT


class CausalContext(nn.Module):
    """A (2h+1)-kernel convolution that reads only the positions strictly before the centre in raster order
    (the rows above, and the left part of the centre row): the zeroed future taps are simply not computed."""

    def __init__(self, width: int, hop: int) -> None:
        super().__init__()
        self.hop = hop
        self.taps = [(dy, dx) for dy in range(-hop, 1) for dx in range(-hop, hop + 1) if dy < 0 or dx < 0]
        self.proj = nn.Linear(len(self.taps) * width, width)

    def forward(self, grid_map: torch.Tensor) -> torch.Tensor:
        """(B, H, W, D) -> (B, H, W, D)."""
        _, hh, ww, _ = grid_map.shape
        k = self.hop
        padded = F.pad(grid_map, (0, 0, k, k, k, 0))  # k rows above, k columns each side
        parts = [padded[:, k + dy:k + dy + hh, k + dx:k + dx + ww] for dy, dx in self.taps]
        return self.proj(torch.cat(parts, dim=-1))


class PatchBlender(nn.Module):
    """One layer's blender: hidden states (B, N, D) and K retrieved codes per position -> (B, N, D).

    The centre term is linear in the retrieved embedding, so it is applied to the (vocab, D) table of aligned
    code embeddings and gathered, instead of to B x N x K copies."""

    def __init__(self, width: int, grid: int, hops: tuple[int, ...] = (1, 2)) -> None:
        super().__init__()
        self.grid = grid
        self.norm = nn.LayerNorm(width)
        self.context = nn.ModuleList(CausalContext(width, h) for h in hops)
        self.centre = nn.ModuleList(nn.Linear(width, width, bias=False) for _ in hops)
        self.hop_logits = nn.Parameter(torch.ones(len(hops)))
        self.gate = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 1), nn.Sigmoid())

    def forward(self, h: torch.Tensor, table: torch.Tensor, codes: torch.Tensor, filled: torch.Tensor) -> torch.Tensor:
        """h (B, N, D); table (vocab, D) aligned code embeddings; codes, filled (B, N, K)."""
        b, n, d = h.shape
        # grid cell q holds the state that has read token q (sequence index q + 1); the last cell is never read
        cells = torch.cat([h[:, 1:], torch.zeros(b, 1, d)], dim=1)
        grid_map = self.norm(cells).reshape(b, self.grid, self.grid, d)
        mix = torch.softmax(self.hop_logits, 0)
        ctx = sum(a * conv(grid_map) for a, conv in zip(mix, self.context, strict=True))
        ctx = ctx.reshape(b, n, d)  # the causal context of each target position
        centre = sum(a * lin(table) for a, lin in zip(mix, self.centre, strict=True))  # (vocab, D)
        o = ctx.unsqueeze(2) + centre[codes] * filled.unsqueeze(-1)  # (B, N, K, D)
        return (o * self.gate(o)).mean(2)


class FAiD(nn.Module):
    """One blender after the attention of block `layer` of a frozen `TokenGPT`, fed K retrieved codes."""

    def __init__(self, base: TokenGPT, layer: int = -1) -> None:
        super().__init__()
        self.base = base
        self.layer = layer % base.depth
        self.aligner = nn.Linear(base.width, base.width)
        self.rms = nn.RMSNorm(base.width)
        self.blender = PatchBlender(base.width, base.grid)
        for p in base.parameters():
            p.requires_grad_(False)
        for p in [*base.ln_f.parameters(), *base.head.parameters()]:
            p.requires_grad_(True)

    def trainable(self) -> list[nn.Parameter]:
        """FAiD's own parameters and the base model's output head (everything else stays frozen)."""
        return [p for p in self.parameters() if p.requires_grad]

    @torch.no_grad()
    def prefix(self, codes: torch.Tensor) -> torch.Tensor:
        """The frozen base's hidden states where the blender reads and writes (dropout off)."""
        was = self.base.training
        self.base.eval()
        h = self.base.prefix(codes, self.layer)
        self.base.train(was)
        return h

    def table(self) -> torch.Tensor:
        """(vocab, D) aligned embeddings of every code: base embedding -> aligner -> RMSNorm."""
        return self.rms(self.aligner(self.base.embed.weight[: self.base.vocab]))

    def forward(self, h: torch.Tensor, retrieved: torch.Tensor, filled: torch.Tensor) -> torch.Tensor:
        """Logits (B, N, vocab) from prefix states `h`, with the features of the (B, N, K) retrieved codes
        added (slots where `filled` is False contribute a zero centre)."""
        h = h + self.blender(h, self.table(), retrieved, filled)
        return self.base.suffix(h, self.layer)
