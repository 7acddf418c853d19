"""FANformer's attention (Dong et al., "FANformer: Improving LLMs through effective periodicity modeling").

FANformer changes only how attention reads its input: before the usual Q/K/V projection every token
goes through a Fourier pre-projection

    FANLayer'(X) = [cos(X W_p) || sin(X W_p) || X W_pbar + B_pbar]      (width unchanged, d -> d)

so attention can compare tokens by phase (cos a cos b + sin a sin b = cos(a - b)) without the rest of the
network having to learn sinusoids. The authors' code fuses W_p and W_pbar into one biased Linear whose
first ``d_p`` outputs feed cos and sin; with their ``p_ratio = 0.125`` the cos and sin parts together
take a quarter of the width (``periodic=0.25`` here). In attention the non-periodic part has no
activation (a GELU there hurt in their ablation). The feed-forward block is left unchanged.

Here the layer is wrapped three ways so Foresight's models can switch it on by configuration:
``FANMultiheadAttention`` (a drop-in ``nn.MultiheadAttention``), ``FANEncoderLayer`` (a drop-in
``nn.TransformerEncoderLayer``) and ``make_attention`` (plain or FAN by name).
"""

from __future__ import annotations

import torch
from torch import nn

from models.layers import ATTENTION_KINDS

PERIODIC_SHARE = 0.25  # cos + sin share of the width, as in the released code (p_ratio 0.125 each)


def periodic_width(d_model: int, periodic: float = PERIODIC_SHARE) -> int:
    """Width of W_p: the cos and the sin halves each get ``d_model * periodic / 2`` channels (>= 1)."""
    if not 0.0 < periodic < 1.0:
        raise ValueError(f"periodic share must be in (0, 1), got {periodic}")
    return max(1, int(d_model * periodic / 2))


class FANLayer(nn.Module):
    """X -> [cos(X W_p) || sin(X W_p) || X W_pbar + B_pbar], the same width in and out."""

    def __init__(self, d_model: int, periodic: float = PERIODIC_SHARE) -> None:
        super().__init__()
        self.d_p = periodic_width(d_model, periodic)
        self.d_g = d_model - 2 * self.d_p
        if self.d_g < 0:
            raise ValueError(f"d_model {d_model} is too small for a periodic share of {periodic}")
        self.input_linear = nn.Linear(d_model, self.d_p + self.d_g)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p, g = self.input_linear(x).split((self.d_p, self.d_g), dim=-1)
        return torch.cat((torch.cos(p), torch.sin(p), g), dim=-1)


class FANMultiheadAttention(nn.MultiheadAttention):
    """``nn.MultiheadAttention`` whose query, key and value inputs first pass one shared ``FANLayer``.

    ATF(X) = Attention(FANLayer'(X)) (the paper's Eq. 5), so the stock fused projection and kernel are
    reused unchanged. Cross-attention applies the same layer to both sides, so phases stay comparable.
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, batch_first: bool = True,
                 periodic: float = PERIODIC_SHARE) -> None:
        super().__init__(embed_dim, num_heads, dropout=dropout, batch_first=batch_first)
        self.fan = FANLayer(embed_dim, periodic)

    def forward(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                **kwargs) -> tuple[torch.Tensor, torch.Tensor | None]:
        q = self.fan(query)
        k = q if key is query else self.fan(key)
        v = k if value is key else (q if value is query else self.fan(value))
        return super().forward(q, k, v, **kwargs)


def make_attention(kind: str, d_model: int, heads: int, dropout: float) -> nn.MultiheadAttention:
    """A batch-first attention module: the stock one for "plain", the FANformer one for "fan"."""
    if kind == "plain":
        return nn.MultiheadAttention(d_model, heads, dropout=dropout, batch_first=True)
    if kind == "fan":
        return FANMultiheadAttention(d_model, heads, dropout=dropout, batch_first=True)
    raise ValueError(f"attention must be one of {ATTENTION_KINDS}, got {kind!r}")


class FANEncoderLayer(nn.TransformerEncoderLayer):
    """``nn.TransformerEncoderLayer`` with FANformer self-attention.

    The stock layer has an inference fast path that reads the Q/K/V weights directly and would skip the
    Fourier pre-projection, so this layer always runs the reference (pre- or post-norm) path.
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str = "relu", norm_first: bool = False, periodic: float = PERIODIC_SHARE) -> None:
        super().__init__(d_model, nhead, dim_feedforward, dropout, activation=activation, batch_first=True,
                         norm_first=norm_first)
        self.self_attn = FANMultiheadAttention(d_model, nhead, dropout=dropout, batch_first=True, periodic=periodic)

    def forward(self, src: torch.Tensor, src_mask: torch.Tensor | None = None,
                src_key_padding_mask: torch.Tensor | None = None, is_causal: bool = False) -> torch.Tensor:
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal=is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal=is_causal))
        return self.norm2(x + self._ff_block(x))
