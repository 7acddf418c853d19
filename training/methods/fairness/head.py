"""A small head on Foresight's shared per-second embeddings whose output no longer tells the cameras apart.

`fit_fair_head(x, y, groups)` learns an encoder z = g(x) (standardise, MLP, then a fixed batch
standardisation so z cannot escape the penalty by shrinking) together with a linear task head on z, minimising
    BCE(head(z), y) + lam * distance(groups' distributions of z)
with the characteristic-function distance (`cf.py`) or, as a baseline, moment matching, or nothing (lam = 0).
`FairHead.represent(x)` gives z for new embeddings (the camera-blind representation downstream models use),
`predict_proba(x)` the task probability; `save` / `load` keep it as one torch file (tensors and a config).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from models import checkpoints
from training.methods.fairness.cf import cf_distance, moment_distance, sample_frequencies

PENALTIES = ("none", "cf", "moments")


@dataclass(frozen=True)
class FairConfig:
    penalty: str = "cf"  # none | cf | moments
    lam: float = 10.0
    dim: int = 8  # size of the representation z
    hidden: int = 64
    epochs: int = 30
    batch: int = 256
    lr: float = 3e-3
    frequencies: int = 256  # k, resampled every step
    sigma: float = 1.0  # frequency scale (z is standardised, so 1 probes its natural scale)


class FairHead(nn.Module):
    def __init__(self, in_dim: int, config: FairConfig):
        super().__init__()
        self.config = config
        self.register_buffer("mean", torch.zeros(in_dim))
        self.register_buffer("scale", torch.ones(in_dim))
        self.encoder = nn.Sequential(nn.Linear(in_dim, config.hidden), nn.ReLU(), nn.Linear(config.hidden, config.dim),
                                     nn.BatchNorm1d(config.dim, affine=False))
        self.head = nn.Linear(config.dim, 1)

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        return self.encoder((x - self.mean) / self.scale)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        z = self.encode(x)
        return z, self.head(z).squeeze(-1)

    @torch.no_grad()
    def represent(self, x: np.ndarray) -> np.ndarray:
        """The camera-blind representation of embeddings x ([N, D] -> [N, dim])."""
        self.eval()
        return self.encode(torch.as_tensor(np.asarray(x, np.float32))).numpy()

    @torch.no_grad()
    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        self.eval()
        return torch.sigmoid(self(torch.as_tensor(np.asarray(x, np.float32)))[1]).numpy()

    def save(self, path: str | Path) -> Path:
        return checkpoints.write({"config": asdict(self.config), "in_dim": int(self.mean.numel()),
                                  "state": self.state_dict()}, path)

    @classmethod
    def load(cls, path: str | Path) -> FairHead:
        blob = checkpoints.read(path, what="fair-head checkpoint")
        head = cls(blob["in_dim"], FairConfig(**blob["config"]))
        head.load_state_dict(blob["state"])
        return head.eval()


def fit_fair_head(x: np.ndarray, y: np.ndarray, groups: np.ndarray, config: FairConfig | None = None,
                  seed: int = 0, progress=None) -> FairHead:
    """Fit on embeddings x [N, D], binary labels y [N] and group ids (camera or site) [N]."""
    config = config or FairConfig()
    if config.penalty not in PENALTIES:
        raise ValueError(f"unknown penalty {config.penalty!r}; choose one of {PENALTIES}")
    if len(np.unique(groups)) < 2 and config.penalty != "none":
        raise ValueError("a fair representation needs at least two groups")
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    xt = torch.as_tensor(np.asarray(x, np.float32))
    yt = torch.as_tensor(np.asarray(y, np.float32))
    gt = torch.as_tensor(np.unique(np.asarray(groups), return_inverse=True)[1])
    model = FairHead(xt.shape[1], config)
    model.mean.copy_(xt.mean(0))
    model.scale.copy_(xt.std(0) + 1e-6)
    opt = torch.optim.Adam(model.parameters(), lr=config.lr)
    epochs = range(config.epochs)
    model.train()
    for _ in epochs if progress is None else progress(epochs, desc=f"fair head ({config.penalty})", total=config.epochs):
        order = torch.randperm(len(xt), generator=gen)
        for i in range(0, len(xt) - 1, config.batch):
            idx = order[i:i + config.batch]
            if len(idx) < 2:
                continue
            z, logit = model(xt[idx])
            loss = F.binary_cross_entropy_with_logits(logit, yt[idx])
            if config.penalty == "cf" and config.lam > 0:
                t = sample_frequencies(config.frequencies, config.dim, config.sigma, gen)
                loss = loss + config.lam * cf_distance(z, gt[idx], t)
            elif config.penalty == "moments" and config.lam > 0:
                loss = loss + config.lam * moment_distance(z, gt[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return model.eval()
