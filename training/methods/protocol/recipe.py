"""The optimizer recipe every stage applies to its own parameters, the same for both models compared.

AdamW with one learning rate for the blocks and the head, an optional separate one for the token embedding
(the authors' reference trains its k-dim embedding with a far larger rate than the blocks), and an optional
schedule: linear warm-up, then linear decay to `floor` times the peak over `steps` updates. A stage builds
its optimizer from the recipe alone, so a Ray worker and an in-process run take identical steps.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class Recipe:
    lr: float = 3e-3
    weight_decay: float = 0.1
    embed_lr: float | None = None  # None: the same as lr
    steps: int = 0  # > 0: warm up, then decay linearly to floor * lr at this many updates; 0: constant
    warmup: int = 0
    floor: float = 0.0

    def factor(self, t: int) -> float:
        """The learning-rate multiplier of update t (0-based)."""
        if self.steps <= 0:
            return 1.0
        if t < self.warmup:
            return (t + 1) / self.warmup
        left = max(0.0, 1.0 - (t - self.warmup) / max(1, self.steps - self.warmup))
        return self.floor + (1.0 - self.floor) * left

    def optimizer(self, named: Iterable[tuple[str, nn.Parameter]]) -> tuple[torch.optim.Optimizer,
                                                                               torch.optim.lr_scheduler.LambdaLR]:
        """AdamW over the parameters (embedding weights by name: `embed.`), with this recipe's schedule."""
        named = list(named)
        embed = [p for n, p in named if n.startswith("embed.") or ".embed." in n]
        rest = [p for n, p in named if not (n.startswith("embed.") or ".embed." in n)]
        groups = [{"params": rest}]
        if embed:
            groups.append({"params": embed, "lr": self.embed_lr or self.lr})
        opt = torch.optim.AdamW(groups, lr=self.lr, weight_decay=self.weight_decay)
        return opt, torch.optim.lr_scheduler.LambdaLR(opt, self.factor)
