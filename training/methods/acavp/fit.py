"""Fitting a prompt: only the prompt's parameters learn; the encoder in front of which it sits stays frozen.

The loss is the frozen classifier's cross-entropy on prompted frames. TrivialAugment (torchvision's
`TrivialAugmentWide`: one randomly chosen operation at a random strength per image) is the paper's remedy for
prompts over-fitting small training sets; it is applied to the camera frames before the prompt.
Adam with a cosine schedule stands in for the paper's SGD at learning rate 40 with gradient normalisation,
which is tuned for CLIP-sized backbones and hundreds of epochs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class FitConfig:
    epochs: int = 40
    lr: float = 0.03
    batch: int = 64
    trivial_augment: bool = False


def trivial_augment(x: torch.Tensor) -> torch.Tensor:
    """TrivialAugmentWide on each image of a [N, 3, H, W] batch in [0, 1] (through uint8, as torchvision wants)."""
    from torchvision.transforms import TrivialAugmentWide

    augment = TrivialAugmentWide()
    as_bytes = (x.clamp(0, 1) * 255).round().to(torch.uint8)
    return torch.stack([augment(img) for img in as_bytes]).float() / 255.0


def fit_prompt(prompt: nn.Module, frozen: nn.Module, normalise: Callable[[torch.Tensor], torch.Tensor],
               x: torch.Tensor, y: torch.Tensor, config: FitConfig, seed: int, progress=None,
               desc: str = "prompt") -> nn.Module:
    """Train `prompt` so that `frozen(normalise(prompt(x)))` classifies camera frames `x` as `y`."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    frozen.eval()
    opt = torch.optim.Adam(prompt.parameters(), lr=config.lr)
    steps = config.epochs * -(-len(x) // config.batch)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    epochs = range(config.epochs)
    for _ in epochs if progress is None else progress(epochs, desc=desc, total=config.epochs):
        order = torch.randperm(len(x), generator=gen)
        for i in range(0, len(x), config.batch):
            idx = order[i:i + config.batch]
            batch = trivial_augment(x[idx]) if config.trivial_augment else x[idx]
            loss = F.cross_entropy(frozen(normalise(prompt(batch))), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
    return prompt


@torch.no_grad()
def accuracy(frozen: nn.Module, normalise: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor,
             y: torch.Tensor, prompt: nn.Module | None = None, clamp: bool = True) -> float:
    """Top-1 accuracy of the frozen classifier on (prompted) frames; `clamp` keeps pixels in [0, 1] as a
    deployed prompt must when it writes 8-bit frames."""
    if prompt is not None:
        x = prompt(x)
        if clamp:
            x = x.clamp(0, 1)
    return float((frozen(normalise(x)).argmax(1) == y).float().mean())
