"""Selective learning on PreFM's future-step loss (``foresight train prefm --future-loss selective``).

PreFM's future positions forecast the labels of seconds t+1 ... t+Lf from the window ending at t, which
is a forecasting target like any other: the same second is forecast by up to Lf windows at different
horizons. The masks apply to the future positions only (the current positions are recognition, not
forecasting):

* residual = |sigmoid(logit) - label| per future step and channel (modality x class);
* timeline = every training clip's seconds laid end to end; window (clip i, current second t) forecasts
  positions base_i + t + 1 ... base_i + t + Lf;
* estimator = ridge regression from the window's newest and mean features to the Lf future labels,
  fitted once on every training window (the paper's DLinear stand-in), its output clipped to [0, 1].

``future_scores`` measures what the future head gets right on a held-out split.
"""

from __future__ import annotations

import numpy as np
import torch

from models.prefm.metrics import segment_counts
from models.prefm.modeling_prefm import PreFM, PreFMConfig
from models.prefm.online import predict_windows
from training.methods.selective.estimator import RidgeEstimator
from training.methods.selective.selector import R_A, R_U, Selector
from training.prefm.data import ClipStore, window_sample


def _window_features(sample: dict[str, np.ndarray]) -> np.ndarray:
    a, v = sample["audio"], sample["visual"]
    return np.concatenate([a[-1], v[-1], a.mean(0), v.mean(0)])


class PreFMFutureSelector:
    """Window ids, timeline positions, the frozen estimator and the selective-learning state for one
    training split."""

    def __init__(self, store: ClipStore, cfg: PreFMConfig, r_u: float = R_U, r_a: float = R_A,
                 alpha: float = 10.0) -> None:
        if not cfg.use_future:
            raise ValueError("selective future loss needs a model with future modeling (variant prefm)")
        self.cfg = cfg
        self.first_window: list[int] = []
        positions, feats, targets = [], [], []
        base = 0
        for i in range(len(store)):
            clip = store.clip(i)
            self.first_window.append(len(positions))
            for t in range(clip.length - cfg.Lf):
                s = window_sample(clip, t, cfg.Lc, cfg.Lf, cfg.audio_rate, cfg.task)
                positions.append(base + t + 1 + np.arange(cfg.Lf))
                feats.append(_window_features(s))
                targets.append(s["labels"][cfg.Lc:])
            base += clip.length
        x = torch.from_numpy(np.stack(feats)).float()
        x = (x - x.mean(0)) / (x.std(0) + 1e-6)
        y = torch.from_numpy(np.stack(targets)).float()
        self.estimate = RidgeEstimator(alpha).fit(x, y).predict(x).clamp(0.0, 1.0)  # (N, Lf, ...)
        self.channels = int(np.prod(y.shape[2:]))
        self.selector = Selector(torch.from_numpy(np.stack(positions)), self.channels, r_u, r_a)

    def window_id(self, clip_index: int, t: int) -> int:
        """The id of the window whose current second is ``t`` in clip ``clip_index``."""
        return self.first_window[clip_index] + t

    def mask(self, windows: torch.Tensor, future_logits: torch.Tensor, future_labels: torch.Tensor) -> torch.Tensor:
        """Boolean mask shaped like ``future_labels`` (B, Lf, ...): the future steps to learn from."""
        windows = windows.long().reshape(-1)
        shape = future_labels.shape
        flat = (len(windows), self.cfg.Lf, self.channels)
        residual = (torch.sigmoid(future_logits.detach()) - future_labels).abs().reshape(flat)
        est_residual = (self.estimate[windows] - future_labels).abs().reshape(flat)
        return self.selector.mask(windows, residual, est_residual).reshape(shape)

    def end_epoch(self) -> None:
        self.selector.end_epoch()


def future_scores(model: PreFM, store: ClipStore, threshold: float = 0.5) -> dict[str, float]:
    """Future-head scores on a split, in percent: per horizon h, the per-second F1 of the labels of t+h
    anticipated at t (counts pooled over seconds, videos and the classes that occur), and their mean."""
    if not model.config.use_future:
        raise ValueError("the model has no future head")
    Lf = model.config.Lf
    mods = ("audio", "visual") if model.config.task == "avvp" else ("av",)
    tp, fp, fn = np.zeros(Lf), np.zeros(Lf), np.zeros(Lf)
    for i in range(len(store)):
        clip = store.clip(i)
        probs = predict_windows(model, clip.audio, clip.visual, clip.st)
        T = clip.length
        for m in mods:
            fut, gt = probs[f"future_{m}"][:T], clip.labels[m]
            for h in range(Lf):
                steps = T - 1 - h  # anticipations made at t = 0 ... T-2-h land inside the clip
                if steps <= 0:
                    continue
                pred = (fut[:steps, h] >= threshold).astype(np.int64)
                counts = segment_counts(pred, gt[h + 1: h + 1 + steps])
                tp[h], fp[h], fn[h] = tp[h] + counts[0].sum(), fp[h] + counts[1].sum(), fn[h] + counts[2].sum()
    f1 = 100.0 * 2 * tp / np.maximum(2 * tp + fp + fn, 1)
    out = {f"future_f1_h{h + 1}": float(f1[h]) for h in range(Lf)}
    out["future_f1_mean"] = float(f1.mean())
    return out


@torch.no_grad()
def mask_shares(model: PreFM, store: ClipStore, batch_size: int = 256) -> dict[str, float]:
    """What the masks would keep for a trained model: one pass over every training window fills the
    residual history and the uncertainty mask, a second pass takes both masks; returns the share of
    positive and of negative future targets kept. Explains what the selective loss leaves out."""
    cfg = model.config
    selector = PreFMFutureSelector(store, cfg)
    model.eval()
    batches = []
    for i in range(len(store)):
        clip = store.clip(i)
        batches += [(selector.window_id(i, t), window_sample(clip, t, cfg.Lc, cfg.Lf, cfg.audio_rate, cfg.task))
                    for t in range(clip.length - cfg.Lf)]
    kept = {"pos": 0.0, "neg": 0.0}
    total = {"pos": 0.0, "neg": 0.0}
    for sweep in range(2):
        for lo in range(0, len(batches), batch_size):
            chunk = batches[lo: lo + batch_size]
            ids = torch.tensor([w for w, _ in chunk])
            a = torch.from_numpy(np.stack([s["audio"] for _, s in chunk]))
            v = torch.from_numpy(np.stack([s["visual"] for _, s in chunk]))
            labels = torch.from_numpy(np.stack([s["labels"][cfg.Lc:] for _, s in chunk]))
            mask = selector.mask(ids, model(a, v).logits[:, cfg.Lc:], labels)
            if sweep == 1:
                pos = labels > 0.5
                kept["pos"] += float(mask[pos].sum())
                kept["neg"] += float(mask[~pos].sum())
                total["pos"] += float(pos.sum())
                total["neg"] += float((~pos).sum())
        selector.end_epoch()
    return {f"kept_{k}": kept[k] / max(total[k], 1.0) for k in kept}
