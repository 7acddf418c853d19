"""Series to forecast: synthetic ones with noise bursts and spikes, and Foresight's own per-second signals.

Synthetic: three sinusoids plus light Gaussian noise (the repeating structure of a stream's loudness or
motion: a ringing alarm, speech rhythm, a periodic camera pan). The training part is corrupted the way
logged stream signals are: heteroscedastic noise bursts (a noisy room, a shaky camera) and isolated
spikes (mic pops, dropped frames). The test part is clean, so a model that memorised the corruption pays
for it there.

Foresight's own: the ``seconds`` records of a result JSON (``pipelines.results.second_record``) give speech
probability, motion energy and person counts per second; the ``events`` list gives an event rate (events
open at that second). The encoder cache's per-second detections (``manifest/<encoder>/<id>.json``) read the
same way: their ``start``, ``speech_prob`` and ``level_db`` (loudness) stand in for ``t``, ``speech`` and
``loudness``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

PERIODS = (24.0, 168.0, 60.0)
AMPLITUDES = (1.0, 0.6, 0.4)
SIGNALS = ("speech", "motion", "persons", "loudness", "events")
ALIASES = {"speech": "speech_prob", "loudness": "level_db"}  # the detections' names for the same numbers


@dataclass
class SyntheticSeries:
    values: np.ndarray  # (T, 1) float32
    train_end: int  # steps [0, train_end) are training data, the rest is the clean test part
    corrupted: np.ndarray  # (T,) bool: steps touched by a burst or a spike


def synthetic_series(seed: int, length: int = 5000, train_share: float = 0.7, noise: float = 0.1,
                     bursts: int = 12, burst_len: int = 60, burst_sigma: float = 0.8,
                     spike_share: float = 0.01, spike_range: tuple[float, float] = (3.0, 6.0)) -> SyntheticSeries:
    """Periodic series whose first ``train_share`` carries bursts and spikes; the rest only ``noise``."""
    rng = np.random.default_rng(seed)
    t = np.arange(length, dtype=np.float64)
    phase = rng.uniform(0, 2 * np.pi, len(PERIODS))
    x = sum(a * np.sin(2 * np.pi * t / p + ph) for a, p, ph in zip(AMPLITUDES, PERIODS, phase, strict=True))
    x = x + noise * rng.standard_normal(length)
    train_end = int(train_share * length)
    corrupted = np.zeros(length, dtype=bool)
    for start in rng.integers(0, train_end - burst_len, bursts):
        x[start: start + burst_len] += burst_sigma * rng.standard_normal(burst_len)
        corrupted[start: start + burst_len] = True
    spikes = rng.choice(train_end, int(spike_share * train_end), replace=False)
    x[spikes] += rng.choice([-1.0, 1.0], len(spikes)) * rng.uniform(*spike_range, len(spikes))
    corrupted[spikes] = True
    return SyntheticSeries(values=x.astype(np.float32)[:, None], train_end=train_end, corrupted=corrupted)


def result_series(result: dict, signals: tuple[str, ...] = ("speech", "motion", "events")) -> np.ndarray:
    """(T, C) float32 per-second signals of one result JSON; a record missing a signal gives 0."""
    bad = [s for s in signals if s not in SIGNALS]
    if bad:
        raise ValueError(f"unknown signal(s) {bad}; choose from {SIGNALS}")
    records = sorted(result.get("seconds") or [], key=lambda r: r.get("t", r.get("start", 0.0)))
    if not records:
        raise ValueError("the result has no 'seconds' records")
    events = result.get("events") or []
    out = np.zeros((len(records), len(signals)), dtype=np.float32)
    for i, rec in enumerate(records):
        t = float(rec.get("t", rec.get("start", i)))
        for j, name in enumerate(signals):
            if name == "events":
                out[i, j] = sum(1 for e in events if e["start"] <= t < e["end"])
            else:
                value = rec.get(name, rec.get(ALIASES.get(name, name)))
                out[i, j] = float(value or 0.0)
    return out


@dataclass
class Windows:
    """Stride-1 forecasting windows: inputs x (N, L, C), targets y (N, H, C) and, per target step, its
    index on one timeline shared by all series (positions (N, H)), which the uncertainty mask needs."""

    x: torch.Tensor
    y: torch.Tensor
    positions: torch.Tensor

    def __len__(self) -> int:
        return int(self.x.shape[0])


def make_windows(series: list[np.ndarray], lookback: int, horizon: int,
                 ranges: list[tuple[int, int]] | None = None) -> Windows:
    """All windows whose input and target both lie in ``ranges[k]`` of ``series[k]`` (default: all of it).
    Series are laid end to end on the timeline, so windows never cross from one series into another."""
    xs, ys, ps = [], [], []
    offset = 0
    for k, s in enumerate(series):
        lo, hi = ranges[k] if ranges is not None else (0, len(s))
        for start in range(lo, hi - lookback - horizon + 1):
            xs.append(s[start: start + lookback])
            ys.append(s[start + lookback: start + lookback + horizon])
            ps.append(offset + np.arange(start + lookback, start + lookback + horizon))
        offset += len(s)
    if not xs:
        raise ValueError(f"no window of {lookback} + {horizon} steps fits the series")
    return Windows(x=torch.from_numpy(np.stack(xs)).float(), y=torch.from_numpy(np.stack(ys)).float(),
                   positions=torch.from_numpy(np.stack(ps)).long())
