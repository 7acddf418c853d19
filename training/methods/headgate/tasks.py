"""The task losses head gating optimises on our two attention models, per sample, and their batches.

CHG needs a negative log-likelihood per sample under the gated model. For PreFM that is the multi-label
NLL of a window (BCE summed over classes, averaged over positions with PreFM's own temporal weights and
over the audio / visual heads; `modality` restricts it to one head, which the contrastive variant uses
to keep one modality and forget the other). For the grounder it is the span loss of a (query, window)
pair: soft cross-entropy of start and end plus the mean inside BCE. Batch builders turn the training
packages' stores into fixed lists of tensor batches.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from models.trisense.features import MODALITIES, batch_features
from models.trisense.modeling_trisense import soft_position_targets
from training.prefm.data import Clip, collate, sample_current_indices, window_sample
from training.prefm.losses import temporal_weights

Batch = dict[str, Any]


# -- PreFM ------------------------------------------------------------------------------------------


def prefm_sample_loss(modality: str | None = None, part: str | None = None):
    """Per-window NLL of a PreFM batch; `modality` "audio" / "visual" reads one AVVP head only,
    `part` "current" / "future" only the Lc current or the Lf predicted future positions."""
    if modality not in (None, "audio", "visual"):
        raise ValueError(f"modality must be None, 'audio' or 'visual', got {modality!r}")
    if part not in (None, "current", "future"):
        raise ValueError(f"part must be None, 'current' or 'future', got {part!r}")

    def loss(model: nn.Module, batch: Batch) -> torch.Tensor:
        cfg = model.config
        out = model(batch["audio"], batch["visual"], batch.get("st"))
        n = out.logits.shape[1]
        w_cur, w_fut = temporal_weights(cfg.task, cfg.Lc, cfg.Lf)
        weights = (torch.cat([w_cur, w_fut]) if cfg.use_future else w_cur)[:n]
        per = F.binary_cross_entropy_with_logits(out.logits, batch["labels"][:, :n], reduction="none")
        if cfg.task == "avvp":
            per = per if modality is None else per[:, :, ("audio", "visual").index(modality)].unsqueeze(2)
            per = per.sum(-1).mean(-1)  # classes summed, heads averaged -> [B, n]
        elif modality is not None:
            raise ValueError("AVEL models have one audio-visual head; modality must be None")
        else:
            per = per.sum(-1)
        if part is not None:
            if part == "future" and n == cfg.Lc:
                raise ValueError("this PreFM has no future outputs (use_future=False)")
            keep = slice(0, cfg.Lc) if part == "current" else slice(cfg.Lc, n)
            per, weights = per[:, keep], weights[keep]
        return (per * weights / weights.mean()).mean(-1)

    return loss


def prefm_batches(clips: list[Clip], config: Any, batch_size: int, rng: np.random.Generator,
                  windows_per_clip: int | None = None) -> list[Batch]:
    """Window batches (PreFM's own sampler: one current second per Lc-second chunk) as tensors."""
    samples = []
    for clip in clips:
        ts = sample_current_indices(clip.length, config.Lf, config.Lc, rng)
        if windows_per_clip is not None:
            ts = ts[:windows_per_clip]
        samples += [window_sample(clip, t, config.Lc, config.Lf, config.audio_rate, config.task) for t in ts]
    if not samples:
        raise ValueError("no PreFM windows: clips must be longer than Lf + 1 seconds")
    order = rng.permutation(len(samples))
    batches = []
    for i in range(0, len(order), batch_size):
        batch = collate([samples[j] for j in order[i:i + batch_size]])
        batches.append({k: torch.from_numpy(v) for k, v in batch.items()})
    return batches


# -- the grounder ------------------------------------------------------------------------------------


def grounder_sample_loss(model: nn.Module, batch: Batch) -> torch.Tensor:
    """Per-pair span NLL: soft CE of start and end (Gaussian targets) plus the mean inside BCE."""
    out = model(batch["feats"], batch["masks"], batch["valid"], batch["query"])
    valid, spans = out.valid, batch["spans"]
    lengths = valid.sum(-1)
    start = torch.minimum(spans[:, 0].floor().clamp(min=0).long(), lengths - 1)
    end = torch.maximum(torch.minimum((spans[:, 1].ceil().long() - 1).clamp(min=0), lengths - 1), start)
    pos = torch.arange(valid.shape[1]).unsqueeze(0)
    inside = ((pos >= start[:, None]) & (pos <= end[:, None])).float()

    def soft_ce(logits: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        return -(soft_position_targets(idx, valid) * torch.log_softmax(logits, -1)).sum(-1)

    vf = valid.float()
    bce = (F.binary_cross_entropy_with_logits(out.inside_logits, inside, reduction="none") * vf).sum(-1)
    return soft_ce(out.start_logits, start) + soft_ce(out.end_logits, end) + bce / vf.sum(-1).clamp(min=1)


def grounder_batches(records: list[Any], features: Any, query_vectors: dict[str, np.ndarray], max_window_s: int,
                     dims: dict[str, int], batch_size: int, seed: int = 0) -> list[Batch]:
    """(query, window) batches: each record's clip cropped to the model window around its first span."""
    from training.trisense.trainer import crop_for_training

    rng = random.Random(seed)
    batches = []
    for i in range(0, len(records), batch_size):
        chunk = records[i:i + batch_size]
        clips, spans = [], []
        for r in chunk:
            clip, span = crop_for_training(features[r.vid], r.windows[0], max_window_s, rng)
            clips.append(clip)
            spans.append(span)
        feats, masks, valid = batch_features(clips, dims)
        query = torch.from_numpy(np.stack([query_vectors[r.query] for r in chunk]).astype(np.float32))
        batches.append({"feats": feats, "masks": masks, "valid": valid, "query": query,
                        "spans": torch.tensor(spans, dtype=torch.float32)})
    return batches


def grounder_dims(model: nn.Module) -> dict[str, int]:
    return {m: model.config.modality_dim(m) for m in MODALITIES}
