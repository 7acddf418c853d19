"""Training loop for the TriSense-lite grounder on (query, window) records over per-second features."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from models.sentences import SentenceEncoder, shared_encoder
from models.trisense.evidence import batch_evidence
from models.trisense.features import MODALITIES, ClipFeatures, batch_features
from models.trisense.grounder import save_checkpoint
from models.trisense.modeling_trisense import TriSenseConfig, TriSenseModel, grounding_loss
from training.trisense.data import FeatureDir, MomentRecord


@dataclass
class TrainConfig:
    """Optimisation settings (the model's own settings live in TriSenseConfig)."""

    epochs: int = 20
    batch_size: int = 32
    lr: float = 5e-4
    weight_decay: float = 1e-4
    warmup_steps: int = 50
    grad_clip: float = 1.0
    seed: int = 0
    progress: bool = True


def set_seed(seed: int) -> None:
    """Seed python, numpy and torch so a run is repeatable on the same machine."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def embed_queries(records: list[MomentRecord], encoder: SentenceEncoder) -> dict[str, np.ndarray]:
    """MiniLM vector for every distinct query text."""
    texts = sorted({r.query for r in records})
    return dict(zip(texts, encoder.encode(texts), strict=True))


def is_negative(record: MomentRecord) -> bool:
    """A negative query-clip pair: the query's answer is not in the clip (the model must abstain)."""
    return bool(record.extra.get("negative"))


class QueryVectors(dict):
    """MiniLM vectors of query texts, encoded on first use (epoch samplers invent new wordings)."""

    def __init__(self, encoder: SentenceEncoder) -> None:
        super().__init__()
        self.encoder = encoder

    def ensure(self, records: list[MomentRecord]) -> None:
        todo = sorted({r.query for r in records} - set(self))
        if todo:
            self.update(zip(todo, self.encoder.encode(todo), strict=True))


def crop_for_training(
    clip: ClipFeatures, window: tuple[float, float], max_len: int, rng: random.Random
) -> tuple[ClipFeatures, tuple[float, float]]:
    """A random window of at most `max_len` seconds that contains the ground-truth span (or clips it)."""
    T = clip.num_seconds
    s, e = max(0.0, window[0]), min(float(T), window[1])
    if e <= s:
        e = min(float(T), s + 1.0)
        s = max(0.0, e - 1.0)
    if T <= max_len:
        return clip, (s, e)
    lo = max(0, int(math.ceil(e)) - max_len)
    hi = min(int(s), T - max_len)
    start = rng.randint(lo, hi) if hi >= lo else max(0, min(int(s), T - max_len))
    end = start + max_len
    return clip.window(start, end), (max(0.0, s - start), min(float(max_len), e - start))


def train(
    model_config: TriSenseConfig,
    records: list[MomentRecord],
    features: FeatureDir,
    out_path: str | Path,
    train_config: TrainConfig | None = None,
    encoder: SentenceEncoder | None = None,
    meta: dict | None = None,
    sampler: Callable[[int, random.Random], list[MomentRecord]] | None = None,
) -> tuple[TriSenseModel, dict]:
    """Train from scratch, save a single `.pt` (config inside) to `out_path`, return the model and history.

    `sampler(epoch, rng)`, when given, draws each epoch's records (new wordings, fresh negative pairs) in place
    of `records`; records with `extra["negative"]` are trained to be outside everywhere."""
    tc = train_config or TrainConfig()
    if not records:
        raise ValueError("no training records")
    set_seed(tc.seed)
    rng = random.Random(tc.seed)
    encoder = encoder or shared_encoder()
    qvecs = QueryVectors(encoder)
    qvecs.ensure(records)
    dims = {m: model_config.modality_dim(m) for m in MODALITIES}

    model = TriSenseModel(model_config)
    optim = torch.optim.AdamW(model.parameters(), lr=tc.lr, weight_decay=tc.weight_decay)
    steps_per_epoch = math.ceil(len(records) / tc.batch_size)
    total_steps = max(1, steps_per_epoch * tc.epochs)

    def lr_at(step: int) -> float:
        if step < tc.warmup_steps:
            return (step + 1) / tc.warmup_steps
        progress = (step - tc.warmup_steps) / max(1, total_steps - tc.warmup_steps)
        return 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))

    sched = torch.optim.lr_scheduler.LambdaLR(optim, lr_at)
    history: list[dict] = []
    step = 0
    for epoch in range(tc.epochs):
        model.train()
        if sampler is not None:
            records = sampler(epoch, rng)
            qvecs.ensure(records)
            steps_per_epoch = math.ceil(len(records) / tc.batch_size)
        order = list(range(len(records)))
        rng.shuffle(order)
        sums: dict[str, float] = {}
        bar = tqdm(range(steps_per_epoch), desc=f"epoch {epoch + 1}/{tc.epochs}", disable=not tc.progress)
        for b in bar:
            batch = [records[i] for i in order[b * tc.batch_size : (b + 1) * tc.batch_size]]
            clips, spans = [], []
            for r in batch:
                clip, span = crop_for_training(features[r.vid], r.windows[0], model_config.max_window_s, rng)
                clips.append(clip)
                spans.append(span)
            feats, masks, valid = batch_features(clips, dims)
            qs = np.stack([qvecs[r.query] for r in batch])
            evidence = batch_evidence(qs, clips, encoder, valid.shape[1]) if model_config.evidence_dim else None
            out = model(feats, masks, valid, torch.from_numpy(qs), evidence)
            present = torch.tensor([not is_negative(r) for r in batch])
            losses = grounding_loss(out, torch.tensor(spans, dtype=torch.float32), present)
            optim.zero_grad(set_to_none=True)
            losses["total"].backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), tc.grad_clip)
            optim.step()
            sched.step()
            step += 1
            for k, v in losses.items():
                sums[k] = sums.get(k, 0.0) + float(v.detach())
            bar.set_postfix(loss=f"{sums['total'] / (b + 1):.3f}")
        epoch_losses = {k: v / steps_per_epoch for k, v in sums.items()}
        history.append({"epoch": epoch + 1, **epoch_losses})
    model.eval()
    save_meta = {"train": {"epochs": tc.epochs, "batch_size": tc.batch_size, "lr": tc.lr, "seed": tc.seed,
                           "records": len(records), "final_loss": history[-1]["total"]}}
    save_meta.update(meta or {})
    save_checkpoint(out_path, model, save_meta)
    return model, {"history": history, "meta": save_meta}
