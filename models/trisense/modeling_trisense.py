"""TriSense-lite: query-weighted fusion of visual, audio and speech seconds, then span prediction.

TriSense (Li et al., NeurIPS 2025) grounds text queries in video with three modalities and a
Query-Based Connector that re-weights modalities from the query, robust to missing ones. Its training
code is unreleased and it sits on a 7B LLM; this is a small model with the same described behaviour
and no LLM:

1. Each modality's per-second features are projected to `d_model`.
2. Connector: the query attends over each modality's seconds to pool one vector per modality; an MLP
   on `[query; pooled_v; pooled_a; pooled_s]` gives one logit per modality; unavailable modalities
   get -inf before the softmax. Per second the weights are renormalised over the modalities present
   at that second, and the fused step is the weighted sum of projected features.
3. Time encoding: sinusoidal on absolute seconds plus a linear term on normalised time (stands in
   for TriSense's time tokens).
4. A small transformer encoder over `[query token; fused seconds]` (optionally with FANformer attention,
   `attention="fan"`, `models.layers.fan`).
5. Span head (VSLNet-style): per-second start, end and inside logits; spans decode by maximising
   `p_start(i) * p_end(j)`, `i <= j`, and are scored with the mean inside probability so that scores
   compare across windows and clips.
6. A coarse retrieval head (per-modality embeddings of seconds and of the query, cosine) that the
   index uses to pick candidate windows in long archives before running the full model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from models.layers.fan import FANEncoderLayer
from models.trisense.config import TriSenseConfig
from models.trisense.decode import SpanPrediction, decode_span_arrays, temporal_iou
from models.trisense.features import MODALITIES

__all__ = ["MODALITIES", "SpanPrediction", "TriSenseConfig", "TriSenseModel", "decode_spans", "temporal_iou"]


@dataclass
class TriSenseOutput:
    """Per-second logits `[B, T]`, clip-level modality weights `[B, 3]` and per-second weights `[B, T, 3]`."""

    start_logits: torch.Tensor
    end_logits: torch.Tensor
    inside_logits: torch.Tensor
    coarse_logits: torch.Tensor
    modality_weights: torch.Tensor
    step_weights: torch.Tensor
    valid: torch.Tensor


def sinusoidal_time(seconds: torch.Tensor, dim: int) -> torch.Tensor:
    """Sinusoidal encoding of absolute times in seconds: `[..., T] -> [..., T, dim]`."""
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=seconds.device) / half)
    angles = seconds.unsqueeze(-1).float() * freqs
    return torch.cat([angles.sin(), angles.cos()], dim=-1)


class QueryConnector(nn.Module):
    """Softmax weights over the available modalities from the query and query-pooled modality features."""

    def __init__(self, d_model: int, fixed: bool = False, evidence: bool = False) -> None:
        super().__init__()
        self.fixed = fixed
        self.scale = 1.0 / math.sqrt(d_model)
        self.mlp = nn.Sequential(
            nn.Linear(d_model * (1 + len(MODALITIES)) + (len(MODALITIES) if evidence else 0), d_model),
            nn.GELU(),
            nn.Linear(d_model, len(MODALITIES)),
        )

    def forward(
        self, q: torch.Tensor, xs: torch.Tensor, masks: torch.Tensor, best: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """q `[B,d]`, xs `[B,3,T,d]`, masks `[B,3,T]`, best `[B,3]` (each modality's best evidence similarity, when
        the model uses evidence) -> (fused `[B,T,d]`, clip weights `[B,3]`, step weights `[B,T,3]`)."""
        present = masks.any(dim=-1)  # [B,3]
        if self.fixed:
            clip_w = present.float() / present.float().sum(-1, keepdim=True).clamp(min=1.0)
        else:
            att = torch.einsum("bd,bmtd->bmt", q, xs) * self.scale
            att = att.masked_fill(~masks, float("-inf"))
            att = torch.softmax(att, dim=-1).nan_to_num(0.0)  # all-masked rows -> zeros
            pooled = torch.einsum("bmt,bmtd->bmd", att, xs)  # [B,3,d]
            parts = [q, pooled.flatten(1)] + ([best] if best is not None else [])
            logits = self.mlp(torch.cat(parts, dim=-1))
            logits = logits.masked_fill(~present, float("-inf"))
            clip_w = torch.softmax(logits, dim=-1).nan_to_num(0.0)
        step_w = clip_w.unsqueeze(-1) * masks.float()  # [B,3,T]
        step_w = step_w / step_w.sum(dim=1, keepdim=True).clamp(min=1e-8)
        fused = torch.einsum("bmt,bmtd->btd", step_w, xs)
        return fused, clip_w, step_w.transpose(1, 2)


class CoarseHead(nn.Module):
    """Per-modality embeddings of seconds and query; cosine similarity ranks windows before fine grounding."""

    def __init__(self, config: TriSenseConfig) -> None:
        super().__init__()
        k = config.coarse_dim
        self.seconds = nn.ModuleDict({m: nn.Linear(config.modality_dim(m), k) for m in MODALITIES})
        self.query = nn.Linear(config.query_dim, k * len(MODALITIES))
        self.logit_scale = nn.Parameter(torch.tensor(10.0))
        self.logit_bias = nn.Parameter(torch.tensor(-5.0))
        self.k = k

    def embed_seconds(self, feats: dict[str, torch.Tensor]) -> torch.Tensor:
        """`{m: [B,T,D_m]}` -> unit vectors `[B,3,T,k]`."""
        return torch.stack([F.normalize(self.seconds[m](feats[m]), dim=-1) for m in MODALITIES], dim=1)

    def embed_query(self, query: torch.Tensor) -> torch.Tensor:
        """`[B,384]` -> unit vectors `[B,3,k]`."""
        return F.normalize(self.query(query).view(query.shape[0], len(MODALITIES), self.k), dim=-1)

    def forward(self, feats: dict[str, torch.Tensor], masks: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
        sims = torch.einsum("bmk,bmtk->bmt", self.embed_query(query), self.embed_seconds(feats))
        sims = sims.masked_fill(~masks, -1.0)
        return sims.max(dim=1).values * self.logit_scale + self.logit_bias


class TriSenseModel(nn.Module):
    """Grounds a query embedding in a window of per-second visual/audio/speech features."""

    def __init__(self, config: TriSenseConfig) -> None:
        super().__init__()
        self.config = config
        d = config.d_model
        self.proj = nn.ModuleDict(
            {
                m: nn.Sequential(nn.LayerNorm(config.modality_dim(m)), nn.Linear(config.modality_dim(m), d))
                for m in MODALITIES
            }
        )
        self.query_proj = nn.Sequential(nn.Linear(config.query_dim, d), nn.GELU(), nn.Linear(d, d))
        self.connector = QueryConnector(d, fixed=config.fixed_modality_weights, evidence=config.evidence_dim > 0)
        k = config.evidence_dim
        if k:  # evidence enters each modality's step, and (fused by the same weights) the span head directly
            self.evidence_proj = nn.ModuleDict({m: nn.Sequential(nn.Linear(k, d), nn.GELU(), nn.Linear(d, d))
                                                for m in MODALITIES})
            self.evidence_skip = nn.Linear(k, 3)  # a direct path from the weighted evidence to the span logits
        self.time_linear = nn.Linear(1, d)
        self.input_norm = nn.LayerNorm(d)
        if config.attention == "fan":
            layer = FANEncoderLayer(d, config.n_heads, config.ff_dim, config.dropout, activation="gelu", norm_first=True)
        else:
            layer = nn.TransformerEncoderLayer(
                d, config.n_heads, config.ff_dim, config.dropout, activation="gelu", batch_first=True, norm_first=True
            )
        self.encoder = nn.TransformerEncoder(layer, config.n_layers, enable_nested_tensor=False)
        self.out_norm = nn.LayerNorm(d)
        self.span_head = nn.Sequential(nn.Linear(2 * d + k, d), nn.GELU(), nn.Linear(d, 3))
        self.coarse = CoarseHead(config)

    def drop_modalities(self, masks: torch.Tensor) -> torch.Tensor:
        """Training-time modality dropout: per sample, with probability p, keep only a random non-empty proper subset."""
        p = self.config.modality_dropout
        if not self.training or p <= 0:
            return masks
        present = masks.any(dim=-1)  # [B,3]
        out = masks.clone()
        for b in range(masks.shape[0]):
            avail = present[b].nonzero().flatten().tolist()
            if len(avail) < 2 or torch.rand(()) >= p:
                continue
            n_keep = int(torch.randint(1, len(avail), ()))  # a non-empty proper subset survives
            keep = [avail[int(i)] for i in torch.randperm(len(avail))[:n_keep]]
            for m in avail:
                if m not in keep:
                    out[b, m] = False
        return out

    def forward(
        self,
        feats: dict[str, torch.Tensor],
        masks: torch.Tensor,
        valid: torch.Tensor,
        query: torch.Tensor,
        evidence: torch.Tensor | None = None,
    ) -> TriSenseOutput:
        """feats `{m: [B,T,D_m]}` (zeros where missing), masks `[B,3,T]` bool, valid `[B,T]` bool, query `[B,384]`,
        evidence `[B,3,T,evidence_dim]` (required when the model was built with `evidence_dim > 0`)."""
        masks = self.drop_modalities(masks & valid.unsqueeze(1))
        xs = torch.stack([self.proj[m](feats[m]) for m in MODALITIES], dim=1)  # [B,3,T,d]
        if self.training and self.config.raw_dropout > 0:  # lean on the evidence, which names unseen concepts too
            keep = torch.rand(xs.shape[0], xs.shape[1], 1, 1, device=xs.device) >= self.config.raw_dropout
            xs = xs * keep
        if self.training and self.config.query_dropout > 0:  # localise from the evidence alone: concept-agnostic
            query = query * (torch.rand(query.shape[0], 1, device=query.device) >= self.config.query_dropout)
        q = self.query_proj(query)
        best = None
        if self.config.evidence_dim:
            if evidence is None:
                raise ValueError("this grounder needs per-second evidence (models.trisense.evidence)")
            evidence = evidence * masks.unsqueeze(-1).float()
            xs = xs + torch.stack([self.evidence_proj[m](evidence[:, i]) for i, m in enumerate(MODALITIES)], dim=1)
            named = evidence[..., 3] > 0
            best = evidence[..., 0].masked_fill(~named, -1.0).max(dim=-1).values  # [B,3]
        fused, clip_w, step_w = self.connector(q, xs, masks, best)

        B, T = valid.shape
        seconds = torch.arange(T, device=valid.device).float().expand(B, T)
        lengths = valid.sum(-1, keepdim=True).clamp(min=1).float()
        time = sinusoidal_time(seconds, self.config.d_model) + self.time_linear((seconds / lengths).unsqueeze(-1))
        steps = self.input_norm(fused + time)

        tokens = torch.cat([q.unsqueeze(1), steps], dim=1)
        pad = torch.cat([torch.zeros(B, 1, dtype=torch.bool, device=valid.device), ~valid], dim=1)
        h = self.out_norm(self.encoder(tokens, src_key_padding_mask=pad))
        hq, ht = h[:, :1], h[:, 1:]
        head_in = [ht, ht * hq]
        if self.config.evidence_dim:
            head_in.append(torch.einsum("btm,bmtk->btk", step_w, evidence))
        logits = self.span_head(torch.cat(head_in, dim=-1))
        if self.config.evidence_dim:
            logits = logits + self.evidence_skip(head_in[-1])
        neg = torch.finfo(logits.dtype).min
        start, end, inside = (logits[..., i].masked_fill(~valid, neg) for i in range(3))
        coarse = self.coarse(feats, masks, query)
        return TriSenseOutput(start, end, inside, coarse, clip_w, step_w, valid)


def soft_position_targets(index: torch.Tensor, valid: torch.Tensor, sigma: float = 1.0) -> torch.Tensor:
    """Gaussian-smoothed one-hot targets over valid positions (tolerates off-by-one boundaries)."""
    T = valid.shape[1]
    pos = torch.arange(T, device=valid.device).float()
    target = torch.exp(-0.5 * ((pos.unsqueeze(0) - index.float().unsqueeze(1)) / sigma) ** 2) * valid.float()
    return target / target.sum(-1, keepdim=True).clamp(min=1e-8)


def grounding_loss(out: TriSenseOutput, spans: torch.Tensor, present: torch.Tensor | None = None
                   ) -> dict[str, torch.Tensor]:
    """Start/end soft cross-entropy, inside BCE and coarse BCE; `spans` `[B,2]` in window seconds.

    `present` `[B]` bool marks queries whose answer is in the clip; the others (negative query-clip pairs) have
    no boundaries to learn and every second is outside, which is what teaches the model to abstain."""
    valid = out.valid
    if present is None:
        present = torch.ones(valid.shape[0], dtype=torch.bool, device=valid.device)
    T = valid.shape[1]
    lengths = valid.sum(-1)
    start_idx = spans[:, 0].floor().clamp(min=0).long()
    end_idx = (spans[:, 1].ceil().long() - 1).clamp(min=0)
    start_idx = torch.minimum(start_idx, lengths - 1)
    end_idx = torch.maximum(torch.minimum(end_idx, lengths - 1), start_idx)
    pos = torch.arange(T, device=valid.device).unsqueeze(0)
    inside = ((pos >= start_idx.unsqueeze(1)) & (pos <= end_idx.unsqueeze(1)) & present.unsqueeze(1)).float()
    pf = present.float()

    def soft_ce(logits: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        logp = torch.log_softmax(logits, dim=-1)
        per = -(soft_position_targets(idx, valid) * logp).sum(-1)
        return (per * pf).sum() / pf.sum().clamp(min=1.0)

    vf = valid.float()

    def masked_bce(logits: torch.Tensor) -> torch.Tensor:
        bce = F.binary_cross_entropy_with_logits(logits, inside, reduction="none")
        return (bce * vf).sum() / vf.sum()

    losses = {
        "start": soft_ce(out.start_logits, start_idx),
        "end": soft_ce(out.end_logits, end_idx),
        "inside": masked_bce(out.inside_logits),
        "coarse": masked_bce(out.coarse_logits),
    }
    losses["total"] = losses["start"] + losses["end"] + losses["inside"] + 0.5 * losses["coarse"]
    return losses


@torch.no_grad()
def decode_spans(
    out: TriSenseOutput, top_k: int = 5, max_span_s: int = 64, nms_iou: float = 0.5
) -> list[list[SpanPrediction]]:
    """Best `top_k` spans per sample (`decode.decode_span_arrays`, the one decoder, on this output's arrays)."""
    def arr(t: torch.Tensor):
        return t.detach().float().cpu().numpy()

    return decode_span_arrays(arr(out.start_logits), arr(out.end_logits), arr(out.inside_logits),
                              arr(out.step_weights), out.valid.cpu().numpy().astype(bool), top_k=top_k,
                              max_span_s=max_span_s, nms_iou=nms_iou)
