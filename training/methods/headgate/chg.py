"""Causal head gating (Nam et al., NeurIPS 2025): fit soft head gates with the task loss, read roles.

The model is frozen; only one logit per head is trained, G = sigmoid(logit), with

    L(lambda) = NLL(G) - lambda * mean_heads clamp(logit, -4, 4)

in three stages: "none" (lambda = 0, logits from logit(U(0, 1))), then from that fit "positive"
(lambda > 0: pressure to keep heads, giving G+) and "negative" (lambda < 0: pressure to drop heads,
giving G-); the authors use |lambda| = 0.1 on LLMs, see `CHGConfig.strength` for our head counts. A head the task needs resists removal (G- high: facilitating); a head whose output
hurts the task is dropped even under retention pressure (G+ low: interfering); a head the task does
not care about just follows the regularizer (G+ high, G- low: irrelevant).

Contrastive CHG fits one mask that keeps a behaviour ("positive" data) and forgets another
("negative" data): NLL_pos + mean(clamp(NLL_pos.detach() - NLL_neg, min=-max_diff)) - lambda *
mean clamp(logit), i.e. raise the negative loss until it exceeds the positive one by max_diff.
Adam on the logits with gradient-norm clipping, as in the authors' trainer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from training.methods.headgate.gates import HeadGates, attention_modules

Batch = Any
# loss(model, batch) -> per-sample negative log-likelihood, shape [B], under whatever gates are attached
SampleLoss = Callable[[nn.Module, Batch], torch.Tensor]
Progress = Callable[..., Iterator]
ROLES = ("facilitating", "interfering", "irrelevant")


def _plain(iterable: Iterable, **_: Any) -> Iterator:
    return iter(iterable)


@dataclass
class CHGConfig:
    """Optimisation of the gate logits (defaults follow the authors' trainer, fewer updates)."""

    steps: int = 200
    lr: float = 0.5
    lam: float = 0.1
    reference_heads: int | None = 512
    clamp: float = 4.0
    grad_clip: float = 1.0
    threshold: float = 0.5
    contrastive_lr: tuple[float, float] = (0.1, 0.01)  # linear decay, as in the contrastive trainer
    max_diff: float = 5.0

    def strength(self, heads: int) -> float:
        """The regularizer weight for a model with `heads` gated heads.

        The penalty is a mean over heads, so the pull on each head falls as 1/heads: the authors'
        lambda = 0.1 on 512-1024-head LLMs is a pull of about 0.1 * 8 / 512 nats per head. With
        `reference_heads` set, lambda is rescaled to give every head the pull it would have in a model
        of that many heads (None: use lambda as given)."""
        return self.lam if self.reference_heads is None else self.lam * heads / self.reference_heads


@dataclass
class HeadReport:
    """Gate values of the three stages and the role of every (module, head)."""

    modules: list[str]
    g_none: torch.Tensor
    g_plus: torch.Tensor
    g_minus: torch.Tensor
    roles: list[list[str]]

    def heads(self, role: str) -> list[tuple[int, int]]:
        return [(m, h) for m, row in enumerate(self.roles) for h, r in enumerate(row) if r == role]

    def rows(self) -> list[dict[str, Any]]:
        """One table row per head: scores f = G-, i = 1 - G+, r = G+ - G- and the role."""
        out = []
        for m, name in enumerate(self.modules):
            for h, role in enumerate(self.roles[m]):
                gp, gm = float(self.g_plus[m, h]), float(self.g_minus[m, h])
                out.append({"module": name, "head": h, "G_none": round(float(self.g_none[m, h]), 4),
                            "G_plus": round(gp, 4), "G_minus": round(gm, 4), "facilitating": round(gm, 4),
                            "interfering": round(1 - gp, 4), "irrelevant": round(max(0.0, gp - gm), 4),
                            "role": role})
        return out

    def to_dict(self) -> dict[str, Any]:
        counts = {role: len(self.heads(role)) for role in ROLES}
        return {"modules": self.modules, "counts": counts, "heads": self.rows()}


def classify(g_plus: torch.Tensor, g_minus: torch.Tensor, threshold: float = 0.5) -> list[list[str]]:
    """interfering if G+ < t (dropped despite retention pressure); else facilitating if G- >= t (kept
    despite removal pressure); else irrelevant."""
    roles = []
    for gp_row, gm_row in zip(g_plus.tolist(), g_minus.tolist(), strict=True):
        roles.append(["interfering" if gp < threshold else "facilitating" if gm >= threshold else "irrelevant"
                      for gp, gm in zip(gp_row, gm_row, strict=True)])
    return roles


class _Frozen:
    """Model in eval mode with no parameter gradients for the duration of a fit."""

    def __init__(self, model: nn.Module) -> None:
        self.model = model

    def __enter__(self) -> None:
        self.flags = [(p, p.requires_grad) for p in self.model.parameters()]
        self.was_training = self.model.training
        for p, _ in self.flags:
            p.requires_grad_(False)
        self.model.eval()

    def __exit__(self, *exc: Any) -> None:
        for p, flag in self.flags:
            p.requires_grad_(flag)
        self.model.train(self.was_training)


def _fit(model: nn.Module, names: list[str], init: torch.Tensor,
         objective: Callable[[torch.Tensor], torch.Tensor], cfg: CHGConfig, steps: int,
         lr: tuple[float, float], progress: Progress | None = None, desc: str = "") -> torch.Tensor:
    """Adam on the gate logits (model frozen, gates attached); `objective(logits)` is the loss."""
    logits = init.detach().clone().requires_grad_(True)
    opt = torch.optim.Adam([logits], lr=lr[0])
    sched = torch.optim.lr_scheduler.LinearLR(opt, 1.0, lr[1] / lr[0], total_iters=max(1, steps))
    with _Frozen(model), HeadGates(model, lambda: logits.sigmoid(), names):
        for _ in (progress or _plain)(range(steps), desc=desc, total=steps):
            opt.zero_grad()
            objective(logits).backward()
            torch.nn.utils.clip_grad_norm_([logits], cfg.grad_clip)
            opt.step()
            sched.step()
    return logits.detach()


def _regularizer(logits: torch.Tensor, cfg: CHGConfig) -> torch.Tensor:
    return logits.clamp(-cfg.clamp, cfg.clamp).mean()


def module_names(model: nn.Module) -> list[str]:
    return [name for name, _ in attention_modules(model)]


def _random_logits(model: nn.Module, names: list[str], seed: int) -> torch.Tensor:
    """logit(U(0, 1)) per head, the authors' initialisation."""
    heads = dict(attention_modules(model))[names[0]].num_heads
    gen = torch.Generator().manual_seed(seed)
    return torch.logit(torch.rand(len(names), heads, generator=gen).clamp(1e-3, 1 - 1e-3))


def causal_head_gating(model: nn.Module, next_batch: Callable[[], Batch], loss: SampleLoss,
                       cfg: CHGConfig | None = None, names: list[str] | None = None,
                       seed: int = 0, progress: Progress | None = None) -> HeadReport:
    """The three CHG stages on `model`'s attention heads; batches come from `next_batch()`."""
    cfg = cfg or CHGConfig()
    names = names or module_names(model)

    def objective(lam: float) -> Callable[[torch.Tensor], torch.Tensor]:
        return lambda logits: loss(model, next_batch()).mean() - lam * _regularizer(logits, cfg)

    rate = (cfg.lr, cfg.lr)
    start = _random_logits(model, names, seed)
    lam = cfg.strength(start.numel())
    none = _fit(model, names, start, objective(0.0), cfg, cfg.steps, rate, progress, "CHG none")
    g_plus = _fit(model, names, none, objective(lam), cfg, cfg.steps, rate, progress, "CHG positive").sigmoid()
    g_minus = _fit(model, names, none, objective(-lam), cfg, cfg.steps, rate, progress, "CHG negative").sigmoid()
    return HeadReport(names, none.sigmoid(), g_plus, g_minus, classify(g_plus, g_minus, cfg.threshold))


def contrastive_head_gating(model: nn.Module, next_pair: Callable[[], tuple[Batch, Batch]],
                            keep_loss: SampleLoss, forget_loss: SampleLoss, cfg: CHGConfig | None = None,
                            names: list[str] | None = None, seed: int = 0,
                            progress: Progress | None = None) -> torch.Tensor:
    """One gate mask that keeps `keep_loss` low and pushes `forget_loss` max_diff nats above it."""
    cfg = cfg or CHGConfig()
    names = names or module_names(model)
    start = _random_logits(model, names, seed)
    lam = cfg.strength(start.numel())

    def objective(logits: torch.Tensor) -> torch.Tensor:
        keep_batch, forget_batch = next_pair()
        keep, forget = keep_loss(model, keep_batch), forget_loss(model, forget_batch)
        gap = (keep.detach() - forget).clamp(min=-cfg.max_diff).mean()
        return keep.mean() + gap - lam * _regularizer(logits, cfg)

    logits = _fit(model, names, start, objective, cfg, cfg.steps, cfg.contrastive_lr, progress, "contrastive CHG")
    return logits.sigmoid()


@torch.no_grad()
def mean_loss(model: nn.Module, batches: list[Batch], loss: SampleLoss, gates: torch.Tensor | None = None,
              names: list[str] | None = None) -> float:
    """Mean per-sample loss over `batches`, with fixed `gates` attached (None: the model as it is)."""
    was_training = model.training
    model.eval()
    try:
        if gates is None:
            values = [loss(model, b) for b in batches]
        else:
            with HeadGates(model, gates, names or module_names(model)):
                values = [loss(model, b) for b in batches]
    finally:
        model.train(was_training)
    return float(torch.cat(values).mean())
