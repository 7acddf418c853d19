"""Train a forecaster of Foresight's own per-second stream signals from result JSON files.

    python -m training.methods.selective.stream results/*.json --signals speech,motion,events --loss selective \
        --out data/forecaster.pt [--compare]

Each result's ``seconds`` records become a (T, C) series (``series.result_series``); channels are
standardised with training statistics; the first 70 % of every series trains, the last 30 % tests, and
windows never cross from one file into another. ``--compare`` also trains the other loss on the same
windows and prints both test MSEs (in standardised units). Bad input prints one ``error:`` line, exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

from training.methods.selective.forecaster import (
    LOSSES,
    ForecastConfig,
    fit_forecaster,
    forecast_mse,
    save_forecaster,
)
from training.methods.selective.series import SIGNALS, Windows, make_windows, result_series


def load_series(paths: list[str], signals: tuple[str, ...]) -> list[np.ndarray]:
    return [result_series(json.loads(Path(p).read_text()), signals) for p in paths]


def split_windows(series: list[np.ndarray], lookback: int, horizon: int,
                  train_share: float = 0.7) -> tuple[Windows, Windows, np.ndarray, np.ndarray]:
    """Standardised train and test windows, and the per-channel mean and std used (from training parts)."""
    cuts = [int(train_share * len(s)) for s in series]
    train_part = np.concatenate([s[:c] for s, c in zip(series, cuts, strict=True)])
    mean, std = train_part.mean(0), train_part.std(0) + 1e-6
    scaled = [((s - mean) / std).astype(np.float32) for s in series]
    train = make_windows(scaled, lookback, horizon, [(0, c) for c in cuts])
    test = make_windows(scaled, lookback, horizon, [(c, len(s)) for s, c in zip(series, cuts, strict=True)])
    return train, test, mean, std


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m training.methods.selective.stream", description=__doc__.split("\n\n")[0])
    p.add_argument("results", nargs="+", help="result JSON files (foresight analyze --out ...)")
    p.add_argument("--signals", default="speech,motion,events", help=f"comma list of {', '.join(SIGNALS)}")
    p.add_argument("--lookback", type=int, default=30)
    p.add_argument("--horizon", type=int, default=5)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--loss", choices=LOSSES, default="selective")
    p.add_argument("--compare", action="store_true", help="also train the other loss and print both test MSEs")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="checkpoint path (.pt)")
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    signals = tuple(s.strip() for s in a.signals.split(",") if s.strip())
    try:
        series = load_series(a.results, signals)
        train, test, mean, std = split_windows(series, a.lookback, a.horizon)
    except (FileNotFoundError, ValueError, KeyError, json.JSONDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    losses = [a.loss] + ([x for x in LOSSES if x != a.loss] if a.compare else [])
    scores, models = {}, {}
    for loss in losses:
        cfg = ForecastConfig(lookback=a.lookback, horizon=a.horizon, channels=len(signals), hidden=a.hidden,
                             epochs=a.epochs, loss=loss, batch_size=64)
        models[loss], _ = fit_forecaster(train, cfg, seed=a.seed)
        scores[loss] = forecast_mse(models[loss], test)
        print(f"{loss}: test MSE {scores[loss]:.4f} (standardised; {len(train)} train / {len(test)} test windows)")
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    save_forecaster(a.out, models[a.loss], {"signals": list(signals), "mean": mean.tolist(), "std": std.tolist(),
                                            "test_mse": scores, "sources": [Path(r).name for r in a.results]})
    print(f"written {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
