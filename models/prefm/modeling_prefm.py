"""PreFM: online audio-visual event parsing with predictive future modeling (Yu et al., NeurIPS 2025).

The network reads a window of the last ``Lc`` seconds of audio and visual features (no positional
encodings, no attention masks: the window is a bag of seconds read at its newest position) and

1. projects each modality to ``d_model`` (AVVP may fuse a second visual stream, ``st``);
2. runs a HAN-style encoder whose layers are shared between modalities: each layer updates the
   audio tokens from (audio, visual), then the visual tokens from (visual, new audio);
3. (future modeling) lets ``Lf`` learnable queries per modality cross-attend to that modality's
   encoded window, giving pseudo-future tokens;
4. (future modeling) refines the futures with the other modality's future and their own current,
   then enhances the currents with their own refined future and the other modality's current
   ("temporal-modality" fusion blocks);
5. classifies every current and future position: AVVP uses one head shared by audio and visual
   (audio-visual = audio AND visual), AVEL one head over the channel concat of audio and visual.

``use_future=False`` is the ablation "the same network without future modeling": steps 3-4 keep
their self and cross-modal attention but have no future tokens to attend to, and there are no future
outputs. The same module, run over a whole clip instead of a window, is the offline baseline.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from models import checkpoints
from models.layers.fan import make_attention
from models.prefm.config import AUDIO_RATES as AUDIO_RATES  # re-exported: callers import them from here
from models.prefm.config import CHECKPOINT_FORMAT, PreFMConfig
from models.prefm.config import CLAP_FRAMES_PER_WINDOW as CLAP_FRAMES_PER_WINDOW
from models.prefm.config import TASKS as TASKS
from models.prefm.config import preset as preset

# --------------------------------------------------------------------------------------------------
# Building blocks (post-norm, as in the authors' code)
# --------------------------------------------------------------------------------------------------


class FeedForward(nn.Module):
    def __init__(self, d_model: int, ff: int, dropout: float) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d_model, ff)
        self.fc2 = nn.Linear(ff, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.drop(F.relu(self.fc1(x))))


class HANLayer(nn.Module):
    """x <- LN(x + CrossAttn(x, y) + SelfAttn(x)); x <- LN(x + FFN(x)). Shared by both modalities.

    ``attention="fan"`` gives both attentions FANformer's Fourier pre-projection (``models.layers.fan``).
    """

    def __init__(self, d_model: int, heads: int, ff: int, dropout: float, attention: str = "plain") -> None:
        super().__init__()
        self.self_attn = make_attention(attention, d_model, heads, dropout)
        self.cross_attn = make_attention(attention, d_model, heads, dropout)
        self.ffn = FeedForward(d_model, ff, dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.drop_cross = nn.Dropout(dropout)
        self.drop_self = nn.Dropout(dropout)
        self.drop_ffn = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
        cross = self.cross_attn(x, other, other, need_weights=False)[0]
        own = self.self_attn(x, x, x, need_weights=False)[0]
        x = self.norm1(x + self.drop_cross(cross) + self.drop_self(own))
        return self.norm2(x + self.drop_ffn(self.ffn(x)))


class FutureQueries(nn.Module):
    """Lf learnable queries read one modality's encoded window: q <- LN(q + CrossAttn(q, x)); FFN."""

    def __init__(self, d_model: int, heads: int, ff: int, dropout: float, num_queries: int) -> None:
        super().__init__()
        self.queries = nn.Parameter(torch.randn(1, num_queries, d_model))
        self.attn = nn.MultiheadAttention(d_model, heads, dropout=dropout, batch_first=True)
        self.ffn = FeedForward(d_model, ff, dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.drop_attn = nn.Dropout(dropout)
        self.drop_ffn = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = self.queries.expand(x.shape[0], -1, -1)
        q = self.norm1(q + self.drop_attn(self.attn(q, x, x, need_weights=False)[0]))
        return self.norm2(q + self.drop_ffn(self.ffn(q)))


class TimeModalityBlock(nn.Module):
    """x <- LN(x + SelfAttn(x) + CrossAttn(x, k_time) + CrossAttn(x, k_modality)); x <- LN(x + FFN(x)).

    ``k_time`` is the temporal context (a future for currents, the other modality's future for futures);
    it is ``None`` in the no-future ablation, where that branch is skipped.
    """

    def __init__(self, d_model: int, heads: int, ff: int, dropout: float) -> None:
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, heads, dropout=dropout, batch_first=True)
        self.time_attn = nn.MultiheadAttention(d_model, heads, dropout=dropout, batch_first=True)
        self.modality_attn = nn.MultiheadAttention(d_model, heads, dropout=dropout, batch_first=True)
        self.ffn = FeedForward(d_model, ff, dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.drop_self = nn.Dropout(dropout)
        self.drop_time = nn.Dropout(dropout)
        self.drop_modality = nn.Dropout(dropout)
        self.drop_ffn = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, k_time: torch.Tensor | None, k_modality: torch.Tensor) -> torch.Tensor:
        update = self.drop_self(self.self_attn(x, x, x, need_weights=False)[0])
        if k_time is not None:
            update = update + self.drop_time(self.time_attn(x, k_time, k_time, need_weights=False)[0])
        update = update + self.drop_modality(self.modality_attn(x, k_modality, k_modality, need_weights=False)[0])
        x = self.norm1(x + update)
        return self.norm2(x + self.drop_ffn(self.ffn(x)))


def recency_encoding(steps: int, d_model: int) -> torch.Tensor:
    """(steps, d) sinusoidal encodings of "seconds before the newest step" (newest = 0).

    Without them the network is permutation-equivariant over the window: it cannot tell the newest
    second from older ones, so the future queries read an unordered bag of the last ``Lc`` seconds.
    Counting back from the newest step gives the same code to "now" in every window, live or offline.
    """
    ago = torch.arange(steps - 1, -1, -1, dtype=torch.float32)[:, None]
    freq = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-torch.log(torch.tensor(10_000.0)) / d_model))
    enc = torch.zeros(steps, d_model)
    enc[:, 0::2] = torch.sin(ago * freq)
    enc[:, 1::2] = torch.cos(ago * freq)[:, : d_model // 2]
    return enc


def clap_window_pooling(frames: int = CLAP_FRAMES_PER_WINDOW, steps: int = 10) -> torch.Tensor:
    """The (steps x frames) linear map the authors apply to a 10-s CLAP map before ``fc_a``.

    Their path reshapes the 64 rows into a (2 x 32) grid, bicubic-upsamples it to (2 x 1024), applies
    ``fc_a``, averages the 2 rows and adaptive-average-pools to 10 steps. Every step but ``fc_a`` is
    linear along time with weights summing to one, so it commutes with the affine ``fc_a``; we bake it
    into one matrix (computed by pushing the identity through the same ops) and apply ``fc_a`` to
    10 vectors instead of 2048 (same result up to float rounding, ~0.4 GMACs cheaper per step).
    """
    if frames % 2:
        raise ValueError("CLAP maps need an even number of rows")
    basis = torch.eye(frames, dtype=torch.float64).view(frames, 1, 2, frames // 2)
    upsampled = F.interpolate(basis, size=(2, 1024), mode="bicubic", align_corners=False)
    pooled = F.adaptive_avg_pool1d(upsampled.mean(dim=2), steps)  # (frames, 1, steps)
    return pooled.squeeze(1).t().contiguous().float()  # (steps, frames)


# --------------------------------------------------------------------------------------------------
# The network
# --------------------------------------------------------------------------------------------------


@dataclass
class PreFMOutput:
    """logits: AVVP (B, T[+Lf], 2, C) with [..., 0, :] audio and [..., 1, :] visual; AVEL (B, T[+Lf], C).

    ``current``/``future`` are the features the heads read (AVVP: (B, n, 2, d); AVEL: (B, n, 2d)), used
    by the distillation loss. ``future`` is None without future modeling.
    """

    logits: torch.Tensor
    current: torch.Tensor
    future: torch.Tensor | None


class PreFM(nn.Module):
    def __init__(self, config: PreFMConfig) -> None:
        super().__init__()
        self.config = config
        c = config
        self.fc_a = nn.Linear(c.audio_dim, c.d_model)
        self.fc_v = nn.Linear(c.visual_keep or c.visual_dim, c.d_model)
        if c.st_dim is not None:
            self.fc_st = nn.Linear(c.st_dim, c.d_model)
            self.fc_fusion = nn.Linear(2 * c.d_model, c.d_model)
        if c.audio_rate == "clap_maps":
            self.register_buffer("clap_pool", clap_window_pooling(), persistent=False)

        # One clone per depth; each clone is applied to audio and then to visual (shared weights).
        self.encoder = nn.ModuleList(HANLayer(c.d_model, c.heads, c.ff, c.dropout, c.attention)
                                     for _ in range(c.layers))

        if c.use_future:
            self.future_a = FutureQueries(c.d_model, c.heads, c.ff, c.dropout, c.Lf)
            self.future_v = FutureQueries(c.d_model, c.heads, c.ff, c.dropout, c.Lf)
            self.fuse_future_a = TimeModalityBlock(c.d_model, c.heads, c.ff, c.dropout)
            self.fuse_future_v = TimeModalityBlock(c.d_model, c.heads, c.ff, c.dropout)
        self.fuse_current_a = TimeModalityBlock(c.d_model, c.heads, c.ff, c.dropout)
        self.fuse_current_v = TimeModalityBlock(c.d_model, c.heads, c.ff, c.dropout)

        head_in = c.d_model if c.task == "avvp" else 2 * c.d_model
        self.head = nn.Linear(head_in, c.num_classes)
        if c.teacher_dim is not None:
            # Trainable projection of teacher features into the student space; used by the losses only.
            self.fc_teacher = nn.Linear(c.teacher_dim, head_in)

    # -- inputs ------------------------------------------------------------------------------------

    @classmethod
    def from_pretrained(cls, path: Any = None) -> PreFM:
        """The model of the PreFM checkpoint at `path` (str or Path), by default the shipped one."""
        from models.prefm import SHIPPED_CHECKPOINT

        return load_checkpoint(SHIPPED_CHECKPOINT if path is None else path)[0]

    def embed_audio(self, audio: torch.Tensor) -> torch.Tensor:
        """(B, T, Da) at 1 fps, or (B, 64, Da) CLAP maps for one 10-s window -> (B, T or 10, d)."""
        if self.config.audio_rate == "clap_maps":
            if audio.shape[1] != self.clap_pool.shape[1]:
                raise ValueError(f"CLAP-map windows need {self.clap_pool.shape[1]} rows, got {audio.shape[1]}")
            audio = torch.einsum("sf,bfd->bsd", self.clap_pool, audio)
        return self.fc_a(audio)

    def embed_audio_clip(self, audio: torch.Tensor, seconds: int) -> torch.Tensor:
        """Audio of a whole clip -> (B, seconds, d), for the offline model. CLAP maps are pooled per
        10-s block (rows 64k ... 64k+63 -> seconds 10k ... 10k+9), the unit the pooling is defined on."""
        if self.config.audio_rate == "clap_maps":
            blocks = -(-seconds // 10)
            rows = audio.new_zeros(audio.shape[0], blocks * 64, audio.shape[2])
            keep = min(audio.shape[1], blocks * 64)
            rows[:, :keep] = audio[:, :keep]
            pooled = torch.einsum("sf,bnfd->bnsd", self.clap_pool, rows.view(audio.shape[0], blocks, 64, -1))
            audio = pooled.reshape(audio.shape[0], blocks * 10, -1)
        return self.fc_a(audio[:, :seconds])

    def embed_visual(self, visual: torch.Tensor, st: torch.Tensor | None) -> torch.Tensor:
        v = self.fc_v(visual[..., : self.config.visual_keep] if self.config.visual_keep else visual)
        if self.config.st_dim is not None:
            if st is None:
                raise ValueError("this model was built with st_dim; pass the st features")
            v = self.fc_fusion(torch.cat([v, self.fc_st(st)], dim=-1))
        return v

    # -- forward -----------------------------------------------------------------------------------

    def forward(self, audio: torch.Tensor, visual: torch.Tensor, st: torch.Tensor | None = None) -> PreFMOutput:
        return self.forward_tokens(self.embed_audio(audio), self.embed_visual(visual, st))

    def forward_tokens(self, a: torch.Tensor, v: torch.Tensor) -> PreFMOutput:
        """The network after the input projections: (B, T, d) audio and visual tokens."""
        if a.shape[1] != v.shape[1]:
            raise ValueError(f"audio gives {a.shape[1]} steps but visual has {v.shape[1]}")
        if self.config.positional:
            enc = recency_encoding(a.shape[1], self.config.d_model).to(a)
            a, v = a + enc, v + enc

        for layer in self.encoder:
            a = layer(a, v)
            v = layer(v, a)

        if self.config.use_future:
            fa = self.future_a(a)
            fv = self.future_v(v)
            fa_ref = self.fuse_future_a(fa, fv, a)
            fv_ref = self.fuse_future_v(fv, fa, v)
            a_out = self.fuse_current_a(a, fa_ref, v)
            v_out = self.fuse_current_v(v, fv_ref, a)
        else:
            fa_ref = fv_ref = None
            a_out = self.fuse_current_a(a, None, v)
            v_out = self.fuse_current_v(v, None, a)

        join = (lambda x, y: torch.stack([x, y], dim=2)) if self.config.task == "avvp" else (
            lambda x, y: torch.cat([x, y], dim=-1))
        current = join(a_out, v_out)
        future = join(fa_ref, fv_ref) if fa_ref is not None else None
        feats = current if future is None else torch.cat([current, future], dim=1)
        return PreFMOutput(logits=self.head(feats), current=current, future=future)

    def project_teacher(self, teacher: torch.Tensor) -> torch.Tensor:
        if self.config.teacher_dim is None:
            raise ValueError("this model has no teacher projection (teacher_dim=None)")
        return self.fc_teacher(teacher)

    def num_parameters(self, inference_only: bool = True) -> int:
        """Parameters; ``inference_only`` leaves out the teacher projection used only in training."""
        skip = "fc_teacher." if inference_only else "\0"
        return sum(p.numel() for n, p in self.named_parameters() if not n.startswith(skip))


def probabilities(logits: torch.Tensor, task: str) -> dict[str, torch.Tensor]:
    """Per-class probabilities from logits of one position: AVVP -> audio, visual, av = sqrt(pa * pv).

    AVEL has a single audio-visual head, so only ``av`` is returned.
    """
    p = torch.sigmoid(logits)
    if task == "avvp":
        pa, pv = p[..., 0, :], p[..., 1, :]
        return {"audio": pa, "visual": pv, "av": torch.sqrt(pa * pv)}
    return {"av": p}


def load_checkpoint(path: str | Path, map_location: str = "cpu") -> tuple[PreFM, PreFMConfig, dict[str, Any]]:
    """Model (in eval mode), config and metadata of a PreFM checkpoint (`online.save_checkpoint` writes them)."""
    payload = checkpoints.read(path, CHECKPOINT_FORMAT, "PreFM checkpoint")
    config = PreFMConfig.from_dict(payload["config"])
    model = PreFM(config)
    model.load_state_dict(payload["state_dict"])
    model.to(map_location).eval()
    return model, config, dict(payload.get("meta", {}))
