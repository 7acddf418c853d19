"""A small forecaster of per-second signals, trained with plain MSE or with selective learning.

The model is deliberately over-parameterised (an MLP from the flattened look-back window to the whole
horizon): that is the regime where plain MSE memorises bursts and spikes and selective learning helps.
``fit_forecaster`` is the one training loop for both losses, so they differ only in the mask.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch
from torch import nn

from models import checkpoints
from training.methods.selective.estimator import RidgeEstimator
from training.methods.selective.masks import masked_mse
from training.methods.selective.selector import R_A, R_U, Selector
from training.methods.selective.series import Windows

LOSSES = ("mse", "selective")
FORMAT = "foresight-forecaster-v1"


@dataclass
class ForecastConfig:
    lookback: int = 96
    horizon: int = 24
    channels: int = 1
    hidden: int = 512
    epochs: int = 25
    batch_size: int = 128
    lr: float = 1e-3
    loss: str = "mse"
    r_u: float = R_U
    r_a: float = R_A
    ridge_alpha: float = 1.0

    def __post_init__(self) -> None:
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {self.loss!r}")


class MLPForecaster(nn.Module):
    """(B, L, C) window -> (B, H, C) forecast through two hidden ReLU layers."""

    def __init__(self, cfg: ForecastConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.net = nn.Sequential(nn.Linear(cfg.lookback * cfg.channels, cfg.hidden), nn.ReLU(),
                                 nn.Linear(cfg.hidden, cfg.hidden), nn.ReLU(),
                                 nn.Linear(cfg.hidden, cfg.horizon * cfg.channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x.reshape(len(x), -1)).reshape(len(x), self.cfg.horizon, self.cfg.channels)


@dataclass
class FitLog:
    """Per epoch: the training loss and the share of timeline steps the uncertainty mask keeps; the
    share of batch steps both masks keep over the whole run."""

    losses: list[float]
    kept_uncertain: list[float]
    kept_overall: float


def fit_forecaster(train: Windows, cfg: ForecastConfig, seed: int = 0,
                   progress: Callable | None = None) -> tuple[MLPForecaster, FitLog]:
    """Train from ``seed`` with Adam on shuffled mini-batches; ``cfg.loss`` picks plain or selective."""
    torch.manual_seed(seed)
    model = MLPForecaster(cfg)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    selector = est_pred = None
    if cfg.loss == "selective":
        est_pred = RidgeEstimator(cfg.ridge_alpha).fit(train.x, train.y).predict(train.x)
        selector = Selector(train.positions, cfg.channels, cfg.r_u, cfg.r_a)
    gen = torch.Generator().manual_seed(seed)
    epochs = range(cfg.epochs) if progress is None else progress(range(cfg.epochs), desc=f"{cfg.loss} seed {seed}",
                                                                 total=cfg.epochs)
    log = FitLog([], [], 1.0)
    kept = total = 0
    for _ in epochs:
        running = 0.0
        for idx in torch.randperm(len(train), generator=gen).split(cfg.batch_size):
            x, y = train.x[idx], train.y[idx]
            pred = model(x)
            mask = None
            if selector is not None:
                mask = selector.mask(idx, (pred - y).abs(), (est_pred[idx] - y).abs())
                kept, total = kept + int(mask.sum()), total + mask.numel()
            loss = masked_mse(pred, y, mask)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            running += loss.item() * len(idx)
        if selector is not None:
            selector.end_epoch()
        log.losses.append(running / len(train))
        log.kept_uncertain.append(selector.kept_share() if selector is not None else 1.0)
    log.kept_overall = kept / total if total else 1.0
    return model, log


@torch.no_grad()
def forecast_mse(model: MLPForecaster, windows: Windows) -> float:
    model.eval()
    return float(((model(windows.x) - windows.y) ** 2).mean())


def save_forecaster(path: str, model: MLPForecaster, meta: dict) -> None:
    """One ``.pt``: the config, the weights and JSON-able metadata (signals, normalisation, scores)."""
    checkpoints.write({"format": FORMAT, "config": asdict(model.cfg), "state_dict": model.state_dict(),
                       "meta": meta}, path)


def load_forecaster(path: str) -> tuple[MLPForecaster, dict]:
    blob = checkpoints.read(path, fmt=FORMAT, what="forecaster checkpoint")
    model = MLPForecaster(ForecastConfig(**blob["config"]))
    model.load_state_dict(blob["state_dict"])
    return model.eval(), blob["meta"]
