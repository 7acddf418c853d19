"""Training and evaluation of PreFM and its two baselines, as in the authors' recipe.

Variants: "prefm" (future modeling), "nofuture" (the same network without it), "offline" (the
no-future network run over whole clips with bidirectional attention: it sees every second of the clip,
past and future, so it is the upper bound an online model is compared with). All three use AdamW with
betas (0.5, 0.999), eps 1e-8, weight decay 1e-4, linear warm-up then cosine decay per epoch, gradient
clipping at L2 norm 1.0, and keep the checkpoint with the best validation mean event-level F1.

Two options for short clips and sparse events (issue 11, real recordings): ``windows_per_clip`` draws several
random windows per clip per epoch (the official sampler draws one per 10-s chunk, so a 13-s clip gives one
optimizer sample per epoch); ``select="audio_f1"`` keeps the checkpoint with the best mean per-class audio
event F1 at tIoU 0.5 pooled over the val clips, which an empty prediction cannot win, unlike ``mean_evt_f1``
(per-video average, where a video with no event and no prediction scores 100).

``future_loss="selective"`` (our extension) averages the future positions' BCE only over the steps that
selective learning keeps (``training.methods.selective.prefm``); the default "bce" is the authors' loss.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from models.prefm.metrics import pooled_class_f1, summarize, video_metrics
from models.prefm.modeling_prefm import PreFM, PreFMConfig
from models.prefm.online import load_checkpoint, predict_offline, predict_windows, save_checkpoint
from training.methods.selective.prefm import PreFMFutureSelector
from training.prefm.data import ClipStore, collate, crop_sample, sample_current_indices, window_sample
from training.prefm.losses import offline_loss, prefm_loss

VARIANTS = ("prefm", "nofuture", "offline")
FUTURE_LOSSES = ("bce", "selective")
SELECT_KEYS = {"mean_evt_f1": "mean_evt_f1", "audio_f1": "audio_f1_05"}  # --select name -> key of `evaluate`


@dataclass
class TrainConfig:
    variant: str = "prefm"
    epochs: int = 60
    batch_size: int = 128
    lr: float = 5e-4
    lr_min: float = 5e-6
    warmup_epochs: int = 10
    weight_decay: float = 1e-4
    betas: tuple[float, float] = (0.5, 0.999)
    eps: float = 1e-8
    grad_clip: float = 1.0
    val_every: int = 6
    seed: int = 87
    distill: bool = True
    offline_crop: int = 60  # seconds of clip per offline training sample
    threads: int = 1
    progress: bool = True
    future_loss: str = "bce"  # "selective": selective learning's masks on the future positions
    windows_per_clip: int = 1  # online: draws of the official sampler per clip per epoch; offline: crops x this
    select: str = "mean_evt_f1"  # validation score that picks the checkpoint, a key of SELECT_KEYS

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {self.variant!r}")
        if self.future_loss not in FUTURE_LOSSES:
            raise ValueError(f"future_loss must be one of {FUTURE_LOSSES}, got {self.future_loss!r}")
        if self.select not in SELECT_KEYS:
            raise ValueError(f"select must be one of {tuple(SELECT_KEYS)}, got {self.select!r}")
        if self.epochs < 1 or self.batch_size < 1 or self.windows_per_clip < 1:
            raise ValueError("epochs, batch_size and windows_per_clip must be >= 1")


@dataclass
class TrainResult:
    checkpoint: Path
    best_epoch: int
    best_val: dict[str, float]
    history: list[dict[str, float]] = field(default_factory=list)
    seconds: float = 0.0


def seed_everything(seed: int) -> np.random.Generator:
    torch.manual_seed(seed)
    np.random.seed(seed)
    return np.random.default_rng(seed)


def lr_at_epoch(epoch: int, cfg: TrainConfig) -> float:
    """The authors' schedule, epoch numbered from 1: epoch/warmup * lr during warm-up, then cosine from
    lr to lr_min reached at the last epoch."""
    if epoch < cfg.warmup_epochs:
        return epoch / cfg.warmup_epochs * cfg.lr
    span = max(cfg.epochs - cfg.warmup_epochs, 1)
    return cfg.lr_min + 0.5 * (cfg.lr - cfg.lr_min) * (1.0 + math.cos((epoch - cfg.warmup_epochs) / span * math.pi))


def model_config_for(store: ClipStore, base: PreFMConfig, variant: str) -> PreFMConfig:
    """``base`` with the data's dimensions, task, audio rate and class names filled in."""
    fields = {**base.to_dict(), **store.dims(), "task": store.task, "audio_rate": store.audio_rate(),
              "class_names": list(store.class_names), "use_future": variant == "prefm"}
    return PreFMConfig.from_dict(fields)


# --------------------------------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------------------------------


def predict_clip(model: PreFM, clip: Any, variant: str) -> dict[str, np.ndarray]:
    if variant == "offline":
        return predict_offline(model, clip.audio, clip.visual, clip.st)
    out = predict_windows(model, clip.audio, clip.visual, clip.st)
    return {k: v[: clip.length] for k, v in out.items() if not k.startswith("future_")}


def evaluate(model: PreFM, store: ClipStore, variant: str, threshold: float = 0.5) -> dict[str, float]:
    """Metrics of a split, per video then averaged (percent), and ``audio_f1_05`` (AVVP only): the mean over
    the split's audio classes of the event F1 at tIoU 0.5 with events pooled over its videos (percent)."""
    per_video, audio_pred, audio_true = [], [], []
    for i in range(len(store)):
        clip = store.clip(i)
        probs = predict_clip(model, clip, variant)
        per_video.append(video_metrics(probs, clip.labels, threshold))
        if "audio" in clip.labels:
            audio_pred.append((probs["audio"][: clip.length] >= threshold).astype(np.int64))
            audio_true.append(clip.labels["audio"])
    out = summarize(per_video)
    if audio_true:
        per_class = pooled_class_f1(audio_pred, audio_true, 5)
        out["audio_f1_05"] = 100.0 * float(np.mean(list(per_class.values()))) if per_class else 0.0
    return out


# --------------------------------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------------------------------


def _epoch_samples(store: ClipStore, cfg: PreFMConfig, tcfg: TrainConfig, rng: np.random.Generator,
                   window_id: Callable[[int, int], int] | None = None) -> list[dict[str, np.ndarray]]:
    """This epoch's samples; with ``window_id(clip, t)`` each online sample also carries its window id."""
    samples = []
    for i in range(len(store)):
        clip = store.clip(i)
        if tcfg.variant == "offline":
            # As many crops per clip as the online sampler draws windows, so all variants see the same
            # number of samples (and optimizer steps) per epoch.
            seconds = min(clip.length, tcfg.offline_crop)
            starts = list(range(0, clip.length - seconds + 1, 10 if cfg.audio_rate == "clap_maps" else 1))
            for _ in range(tcfg.windows_per_clip * max(1, math.ceil((clip.length - cfg.Lf) / cfg.Lc))):
                samples.append(crop_sample(clip, int(rng.choice(starts)), seconds, cfg.audio_rate, cfg.task))
        else:
            starts = [t for _ in range(tcfg.windows_per_clip) for t in sample_current_indices(clip.length, cfg.Lf, cfg.Lc, rng)]
            for t in starts:
                samples.append(window_sample(clip, t, cfg.Lc, cfg.Lf, cfg.audio_rate, cfg.task))
                if window_id is not None:
                    samples[-1]["window"] = np.array([window_id(i, t)], dtype=np.int64)
    return samples


def _batches(samples: list[dict[str, np.ndarray]], size: int, rng: np.random.Generator, by_length: bool) -> list[list[int]]:
    """Shuffled batches; offline samples are batched only with samples of the same clip length."""
    order = rng.permutation(len(samples)).tolist()
    if not by_length:
        return [order[i: i + size] for i in range(0, len(order), size)]
    groups: dict[int, list[int]] = {}
    for i in order:
        groups.setdefault(samples[i]["visual"].shape[0], []).append(i)
    batches = [g[i: i + size] for g in groups.values() for i in range(0, len(g), size)]
    return [batches[i] for i in rng.permutation(len(batches))]


def _to_torch(batch: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
    return {k: torch.from_numpy(v) for k, v in batch.items()}


def train(base: PreFMConfig, train_store: ClipStore, val_store: ClipStore | None, tcfg: TrainConfig,
          checkpoint: str | Path) -> TrainResult:
    """Train one variant; the best validation checkpoint (or the last one without validation) is saved
    to ``checkpoint`` with the configs and validation metrics in its metadata."""
    torch.set_num_threads(tcfg.threads)
    rng = seed_everything(tcfg.seed)
    cfg = model_config_for(train_store, base, tcfg.variant)
    model = PreFM(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=tcfg.lr, betas=tcfg.betas, eps=tcfg.eps,
                            weight_decay=tcfg.weight_decay)
    loss_fn = offline_loss if tcfg.variant == "offline" else prefm_loss
    selector = None
    if tcfg.future_loss == "selective":
        selector = PreFMFutureSelector(train_store, cfg)
    checkpoint = Path(checkpoint)
    best, best_epoch, history = (-1.0, -1.0), 0, []
    select_key = SELECT_KEYS[tcfg.select]
    best_val: dict[str, float] = {}
    started = time.perf_counter()
    bar = tqdm(range(1, tcfg.epochs + 1), desc=f"train {tcfg.variant}", disable=not tcfg.progress, leave=False)
    for epoch in bar:
        lr = lr_at_epoch(epoch, tcfg)
        for group in opt.param_groups:
            group["lr"] = lr
        model.train()
        samples = _epoch_samples(train_store, cfg, tcfg, rng, selector.window_id if selector else None)
        if not samples:
            raise ValueError("the training split yields no samples (clips shorter than Lf + 1 seconds?)")
        totals = np.zeros(4)
        for idx in _batches(samples, tcfg.batch_size, rng, tcfg.variant == "offline"):
            b = _to_torch(collate([samples[i] for i in idx]))
            out = model(b["audio"], b["visual"], b.get("st")) if tcfg.variant != "offline" else \
                model.forward_tokens(model.embed_audio_clip(b["audio"], b["visual"].shape[1]),
                                     model.embed_visual(b["visual"], b.get("st")))
            extra = {}
            if selector is not None:
                extra["future_mask"] = selector.mask(b["window"], out.logits[:, cfg.Lc:], b["labels"][:, cfg.Lc:])
            terms = loss_fn(model, out, b["labels"], b.get("teacher"), tcfg.distill, **extra)
            opt.zero_grad(set_to_none=True)
            terms.total.backward()
            if tcfg.grad_clip > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), tcfg.grad_clip)
            opt.step()
            totals += len(idx) * np.array([t.item() for t in (terms.total, terms.cls, terms.kd_current, terms.kd_future)])
        if selector is not None:
            selector.end_epoch()
        row = {"epoch": epoch, "lr": lr, **dict(zip(("loss", "cls", "kd_cur", "kd_fut"), (totals / len(samples)).tolist(), strict=True))}
        if val_store is not None and (epoch % tcfg.val_every == 0 or epoch == tcfg.epochs):
            val = evaluate(model, val_store, tcfg.variant)
            row["val_mean_evt_f1"] = val["mean_evt_f1"]
            if "audio_f1_05" in val:
                row["val_audio_f1_05"] = val["audio_f1_05"]
            score = (val.get(select_key, 0.0), val["mean_evt_f1"])  # ties go to the per-video average
            if score > best:
                best, best_epoch, best_val = score, epoch, val
                save_checkpoint(checkpoint, model, cfg, {"variant": tcfg.variant, "epoch": epoch, "val": val,
                                                         "train": _json_safe(asdict(tcfg))})
        history.append(row)
        bar.set_postfix(loss=f"{row['loss']:.3f}", val=f"{row.get('val_mean_evt_f1', float('nan')):.1f}")
    if val_store is None:
        best_epoch = tcfg.epochs
        save_checkpoint(checkpoint, model, cfg, {"variant": tcfg.variant, "epoch": best_epoch, "train": _json_safe(asdict(tcfg))})
    return TrainResult(checkpoint=checkpoint, best_epoch=best_epoch, best_val=best_val, history=history,
                       seconds=time.perf_counter() - started)


def evaluate_checkpoint(path: str | Path, store: ClipStore) -> dict[str, float]:
    model, _, meta = load_checkpoint(path)
    return evaluate(model, store, str(meta.get("variant", "prefm")))


def _json_safe(d: dict[str, Any]) -> dict[str, Any]:
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in d.items()}
