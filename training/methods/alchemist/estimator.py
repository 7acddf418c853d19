"""Alchemist's estimator: a pre-trained diffusion model scores how much a sample would help fine-tuning.

The paper ranks candidates by reading a pre-trained text-to-image diffusion model while it denoises each
candidate; the review we could read says the signal comes from its cross-attention, and the exact score is
not public. Two readings are implemented, each an average over timesteps t and noise draws eps of one
forward pass on x_t = sqrt(ab_t) x + sqrt(1 - ab_t) eps:

* `cond_gain`: ||eps - eps(x_t, t, empty)||^2 - ||eps - eps(x_t, t, caption)||^2, how much the caption helps
  the model denoise the image (low for mis-captioned or structureless images);
* `xattn_norm`: the mean L2 norm of the cross-attention block outputs over image tokens, summed over
  layers, how strongly the caption is being "written" into the image.

Which one to trust is decided on a small labelled calibration set (`calibrate`), as the paper tunes its
estimator on a few known-good and known-bad images; the pool being ranked is never used for that.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from sklearn.metrics import roc_auc_score

from training.methods.alchemist.diffusion import Denoiser, Schedule

TIMESTEP_FRACTIONS = (0.3, 0.5, 0.7)


@torch.no_grad()
def _passes(model: Denoiser, x: torch.Tensor, caption: torch.Tensor, draws: int, seed: int,
            fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]) -> np.ndarray:
    gen = torch.Generator().manual_seed(seed)
    sched = Schedule(model.steps)
    total = torch.zeros(x.shape[0])
    for frac in TIMESTEP_FRACTIONS:
        t = torch.full((x.shape[0],), int(frac * (model.steps - 1)), dtype=torch.long)
        for _ in range(draws):
            eps = torch.randn(x.shape, generator=gen)
            total += fn(sched.noised(x, t, eps), t, eps)
    return (total / (len(TIMESTEP_FRACTIONS) * draws)).numpy()


def cond_gain(model: Denoiser, x: torch.Tensor, caption: torch.Tensor, draws: int = 4, seed: int = 0) -> np.ndarray:
    """Denoising-error reduction the caption brings, per sample (higher = better aligned, more structured)."""
    empty = torch.zeros_like(caption)

    def gain(xt: torch.Tensor, t: torch.Tensor, eps: torch.Tensor) -> torch.Tensor:
        e_u = ((model(xt, t, empty) - eps) ** 2).sum(-1)
        e_c = ((model(xt, t, caption) - eps) ** 2).sum(-1)
        return e_u - e_c

    return _passes(model, x, caption, draws, seed, gain)


def xattn_norm(model: Denoiser, x: torch.Tensor, caption: torch.Tensor, draws: int = 4, seed: int = 0) -> np.ndarray:
    """Cross-attention output norm per sample, averaged over image tokens and summed over layers."""

    def norm(xt: torch.Tensor, t: torch.Tensor, eps: torch.Tensor) -> torch.Tensor:
        _, crosses = model(xt, t, caption, return_cross=True)
        return sum(c.norm(dim=-1).mean(-1) for c in crosses)

    return _passes(model, x, caption, draws, seed, norm)


SCORERS: dict[str, Callable[..., np.ndarray]] = {"cond_gain": cond_gain, "xattn_norm": xattn_norm}


def score(model: Denoiser, x: np.ndarray, caption: np.ndarray, variant: str, draws: int = 4, seed: int = 0,
          batch: int = 1024) -> np.ndarray:
    """Estimator score of every sample (numpy in, numpy out), in batches."""
    fn = SCORERS[variant]
    xs, cs = torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(caption, dtype=torch.float32)
    parts = [fn(model, xs[i:i + batch], cs[i:i + batch], draws=draws, seed=seed + i) for i in range(0, len(xs), batch)]
    return np.concatenate(parts)


def calibrate(model: Denoiser, x: np.ndarray, caption: np.ndarray, good: np.ndarray, draws: int = 4,
              seed: int = 0) -> tuple[str, int, dict[str, float]]:
    """Pick the variant and sign whose score best separates known-good from known-bad calibration samples.

    Returns (variant, sign, AUC per variant after the sign is applied)."""
    aucs, best = {}, ("cond_gain", 1, -1.0)
    for name in SCORERS:
        auc = float(roc_auc_score(good.astype(int), score(model, x, caption, name, draws, seed)))
        sign = 1 if auc >= 0.5 else -1
        aucs[name] = max(auc, 1 - auc)
        if aucs[name] > best[2]:
            best = (name, sign, aucs[name])
    return best[0], best[1], aucs


def standardise_by_caption(scores: np.ndarray, caption: np.ndarray) -> np.ndarray:
    """Scores made comparable across captions: (s - median) / std within each distinct caption.

    The raw score's scale depends on the prompt (some captions help denoising more than others), so a global
    top-k would fill the set with a few easy captions; the paper's set is general-purpose (diverse), and
    ranking within captions keeps every caption represented."""
    keys = np.unique(np.asarray(caption) > 0.5, axis=0, return_inverse=True)[1].ravel()
    out = np.empty_like(scores, dtype=np.float64)
    for g in np.unique(keys):
        sel = keys == g
        out[sel] = (scores[sel] - np.median(scores[sel])) / (scores[sel].std() + 1e-8)
    return out


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k highest scores, best first."""
    return np.argsort(-scores, kind="stable")[:k]
