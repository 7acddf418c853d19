"""PreFM's losses as the authors coded them.

* Focal temporal prioritization: BCE on every current and future position, weighted by a Gaussian
  over time that favours the newest current seconds and the nearest future ones.
* Modality-agnostic robust representation: cosine distillation of the features the heads read to
  teacher features (ONE-PEACE in the paper) passed through a trainable projection, with the same
  temporal weights, separately for the current and the future positions.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from models.prefm.modeling_prefm import PreFM, PreFMOutput


def gaussian_weights(num_steps: int, center: float, sigma: float) -> torch.Tensor:
    """w_t = exp(-((t - center) / sigma)^2 / 2), rescaled so that the weights sum to ``num_steps``."""
    t = torch.arange(num_steps, dtype=torch.float32)
    w = torch.exp(-0.5 * ((t - center) / sigma) ** 2)
    return w * (num_steps / w.sum())


def temporal_weights(task: str, Lc: int, Lf: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(current, future) weights. AVVP: one Gaussian (N=2Lc, c=Lc-0.5, sigma=4) split into its first Lc
    and next Lf entries; AVEL: (N=Lc, c=Lc-0.5, sigma=5) and (N=Lf, c=-0.5, sigma=2.5). With Lc=10,
    Lf=5 these are exactly the values in the authors' scripts."""
    if task == "avvp":
        if Lf > Lc:
            raise ValueError("the AVVP weighting needs Lf <= Lc")
        w = gaussian_weights(2 * Lc, Lc - 0.5, 4.0)
        return w[:Lc], w[Lc: Lc + Lf]
    return gaussian_weights(Lc, Lc - 0.5, 5.0), gaussian_weights(Lf, -0.5, 2.5)


def _expand(w: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return w.to(like.device).view(1, -1, *([1] * (like.dim() - 2)))


def weighted_bce(logits: torch.Tensor, targets: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """mean over batch, positions, (modalities,) classes of w_t * BCEWithLogits; positions on dim 1."""
    per = F.binary_cross_entropy_with_logits(logits, targets, reduction="none")
    return (per * _expand(weights, per)).mean()


def cosine_distillation(student: torch.Tensor, teacher: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """mean of w_t * (1 - cos(student, teacher)) over the feature axis; equals the authors'
    ``mean(w) - mean(w * cos)`` (AVVP) and ``1 - mean(w * cos)`` (AVEL, whose weights average 1).
    All-zero teacher rows (a modality without a teacher, e.g. the visual side of YAMNet distillation) carry no
    direction and are left out of the mean; with no zero rows the value is exactly the authors'."""
    cos = F.cosine_similarity(student, teacher, dim=-1)
    present = (teacher.abs().sum(-1) > 0).to(cos.dtype)
    per = _expand(weights, cos) * (1.0 - cos) * present
    if bool(present.all()):
        return per.mean()
    return per.sum() / present.sum().clamp(min=1.0)


@dataclass
class LossTerms:
    total: torch.Tensor
    cls: torch.Tensor
    kd_current: torch.Tensor
    kd_future: torch.Tensor


def masked_future_bce(logits: torch.Tensor, targets: torch.Tensor, weights: torch.Tensor, Lc: int,
                      future_mask: torch.Tensor) -> torch.Tensor:
    """``weighted_bce`` whose future positions (from ``Lc`` on) are averaged over the kept steps only:
    they are multiplied by mask / mean(mask), so the future part keeps its total weight."""
    per = F.binary_cross_entropy_with_logits(logits, targets, reduction="none") * _expand(weights, logits)
    m = future_mask.to(per.dtype)
    factor = torch.ones_like(per)
    factor[:, Lc:] = m / m.mean().clamp(min=1e-6)
    return (per * factor).mean()


def prefm_loss(model: PreFM, out: PreFMOutput, labels: torch.Tensor, teacher: torch.Tensor | None = None,
               distill: bool = True, future_mask: torch.Tensor | None = None) -> LossTerms:
    """Loss of a window batch: ``labels`` holds the Lc current then Lf future positions (the future part
    is ignored without future modeling); ``teacher`` the matching teacher features, or None.
    ``future_mask`` (B, Lf, ...) bool keeps only some future steps in the BCE (selective learning)."""
    cfg = model.config
    w_cur, w_fut = temporal_weights(cfg.task, cfg.Lc, cfg.Lf)
    n = out.logits.shape[1]
    weights = torch.cat([w_cur, w_fut]) if cfg.use_future else w_cur
    if future_mask is not None and cfg.use_future:
        cls = masked_future_bce(out.logits, labels[:, :n], weights, cfg.Lc, future_mask)
    else:
        cls = weighted_bce(out.logits, labels[:, :n], weights)
    zero = cls.new_zeros(())
    kd_cur = kd_fut = zero
    if distill and teacher is not None and cfg.teacher_dim is not None:
        projected = model.project_teacher(teacher)
        kd_cur = cosine_distillation(out.current, projected[:, : cfg.Lc], w_cur)
        if out.future is not None:
            kd_fut = cosine_distillation(out.future, projected[:, cfg.Lc: cfg.Lc + cfg.Lf], w_fut)
    return LossTerms(total=cls + kd_cur + kd_fut, cls=cls, kd_current=kd_cur, kd_future=kd_fut)


def offline_loss(model: PreFM, out: PreFMOutput, labels: torch.Tensor, teacher: torch.Tensor | None = None,
                 distill: bool = True) -> LossTerms:
    """Loss of the offline model over whole clips: the same BCE and distillation with uniform weights
    (there is no newest second to prioritize when the model sees the whole clip)."""
    ones = torch.ones(out.logits.shape[1])
    cls = weighted_bce(out.logits, labels, ones)
    kd = cls.new_zeros(())
    if distill and teacher is not None and model.config.teacher_dim is not None:
        kd = cosine_distillation(out.current, model.project_teacher(teacher), ones)
    return LossTerms(total=cls + kd, cls=cls, kd_current=kd, kd_future=cls.new_zeros(()))
