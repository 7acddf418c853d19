"""Selective learning: the masks against brute force, the estimator, the stream forecaster, the PreFM
future-loss option and the direction of the claim."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from models.prefm.modeling_prefm import PreFM, PreFMConfig
from models.prefm.online import load_checkpoint
from training.methods.selective.estimator import RidgeEstimator
from training.methods.selective.forecaster import (
    ForecastConfig,
    fit_forecaster,
    forecast_mse,
    load_forecaster,
)
from training.methods.selective.masks import anomaly_keep, masked_mse, position_variance, uncertainty_keep
from training.methods.selective.prefm import PreFMFutureSelector, future_scores, mask_shares
from training.methods.selective.selector import Selector
from training.methods.selective.series import make_windows, result_series, synthetic_series
from training.methods.selective.stream import main as stream_main
from training.prefm.cli import train_main
from training.prefm.data import ClipStore
from training.prefm.losses import masked_future_bce, prefm_loss, temporal_weights, weighted_bce
from training.prefm.synthetic import generate
from training.prefm.trainer import TrainConfig

torch.set_num_threads(1)


def test_position_variance_matches_a_loop():
    g = torch.Generator().manual_seed(0)
    positions = torch.arange(6)[:, None] + torch.arange(4)[None]  # 6 stride-1 windows, horizon 4
    residuals = torch.rand(6, 4, 2, generator=g)
    filled = torch.tensor([True, True, False, True, True, True])
    var, count = position_variance(residuals, positions, filled, 9)
    for p in range(9):
        vals = [residuals[n, h] for n in range(6) for h in range(4) if filled[n] and positions[n, h] == p]
        assert count[p].item() == len(vals)
        if vals:
            torch.testing.assert_close(var[p], torch.stack(vals).var(0, unbiased=False), atol=1e-6, rtol=1e-5)


def test_masks_drop_the_asked_shares():
    g = torch.Generator().manual_seed(1)
    var = torch.rand(100, 3, generator=g)
    keep = uncertainty_keep(var, torch.full((100,), 3.0), 0.3)
    assert all(abs(int((~keep[:, c]).sum()) - 30) <= 1 for c in range(3))
    assert (var[~keep[:, 0], 0].min() >= var[keep[:, 0], 0].max())  # the most variable ones go
    assert uncertainty_keep(var, torch.ones(100), 0.3).all()  # no variance without two windows
    r, r_est = torch.rand(8, 20, 2, generator=g), torch.rand(8, 20, 2, generator=g)
    keep = anomaly_keep(r, r_est, 0.3)
    dropped = (~keep).sum(1)
    assert ((dropped - 6).abs() <= 1).all()
    dist = r - r_est
    for b in range(8):
        for c in range(2):
            assert dist[b, ~keep[b, :, c], c].max() < dist[b, keep[b, :, c], c].min()
    assert anomaly_keep(torch.zeros(2, 5, 1), torch.zeros(2, 5, 1), 0.3).all()  # ties are not dropped whole
    pred, target = torch.tensor([1.0, 2.0, 3.0]), torch.tensor([0.0, 0.0, 0.0])
    assert masked_mse(pred, target, torch.tensor([True, False, True])).item() == pytest.approx(5.0)
    assert masked_mse(pred, target).item() == pytest.approx(14 / 3)


def test_selector_learns_uncertainty_after_an_epoch():
    positions = torch.arange(50)[:, None] + torch.arange(5)[None]
    sel = Selector(positions, channels=1, r_u=0.2, r_a=0.0)
    idx = torch.arange(50)
    first = sel.mask(idx, torch.rand(50, 5, 1))
    assert first.all() and sel.kept_share() == 1.0
    sel.end_epoch()
    assert 0.75 <= sel.kept_share() <= 0.85
    assert not sel.mask(idx, torch.rand(50, 5, 1)).all()


def test_ridge_estimator_recovers_a_linear_map():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(200, 6, 1, generator=g)
    w = torch.randn(6, 3, generator=g)
    y = (x.reshape(200, 6) @ w + 0.5).reshape(200, 3, 1)
    est = RidgeEstimator(alpha=1e-6).fit(x, y)
    torch.testing.assert_close(est.predict(x), y, atol=1e-4, rtol=1e-4)


def test_result_series_and_stream_forecaster(tmp_path):
    paths = []
    for k in range(2):
        t = np.arange(80)
        seconds = [{"t": float(i), "speech": float(0.5 + 0.5 * np.sin(i / 3 + k)), "motion": float(i % 7) / 7}
                   for i in t]
        result = {"seconds": seconds, "events": [{"label": "Speech", "start": 10.0, "end": 14.0},
                                                 {"label": "Car", "start": 12.0, "end": 20.0}]}
        paths.append(tmp_path / f"r{k}.json")
        paths[-1].write_text(json.dumps(result))
    s = result_series(json.loads(paths[0].read_text()), ("speech", "events", "loudness"))
    assert s.shape == (80, 3) and s[12, 1] == 2 and s[15, 1] == 1 and s[20, 1] == 0 and not s[:, 2].any()
    manifest = {"seconds": [{"start": 1.0, "level_db": -20.0, "speech_prob": 0.5}, {"start": 0.0, "level_db": -60.0}]}
    np.testing.assert_allclose(result_series(manifest, ("loudness", "speech")), [[-60, 0], [-20, 0.5]])
    windows = make_windows([s, s], 10, 3, [(0, 50), (0, 50)])
    assert len(windows) == 2 * 38 and windows.positions[38, 0] == 80 + 10  # the second series starts at 80
    out = tmp_path / "f.pt"
    rc = stream_main([str(p) for p in paths] + ["--signals", "speech,motion", "--lookback", "10", "--horizon", "3",
                                              "--epochs", "2", "--hidden", "16", "--compare", "--out", str(out)])
    assert rc == 0
    model, meta = load_forecaster(str(out))
    assert meta["signals"] == ["speech", "motion"] and set(meta["test_mse"]) == {"mse", "selective"}
    assert model(torch.zeros(1, 10, 2)).shape == (1, 3, 2)
    assert stream_main([str(tmp_path / "missing.json"), "--out", str(out)]) == 2


def test_prefm_future_mask_loss_and_selector(tmp_path):
    torch.manual_seed(0)
    cfg = PreFMConfig(audio_dim=6, visual_dim=6, num_classes=3, d_model=8, ff=16, layers=1, heads=2)
    model = PreFM(cfg)
    out = model(torch.randn(2, 10, 6), torch.randn(2, 10, 6))
    labels = (torch.rand(2, 15, 2, 3) > 0.5).float()
    ones = torch.ones(2, 5, 2, 3, dtype=torch.bool)
    w = torch.cat(temporal_weights("avvp", 10, 5))
    torch.testing.assert_close(masked_future_bce(out.logits, labels, w, 10, ones), weighted_bce(out.logits, labels, w))
    partial = ones.clone()
    partial[:, 2:] = False
    assert prefm_loss(model, out, labels, future_mask=partial).cls.item() != pytest.approx(prefm_loss(model, out, labels).cls.item())

    root = generate(tmp_path / "syn", {"train": 4, "val": 2, "test": 2}, video_num=2, audio_dim=6, visual_dim=6)
    store = ClipStore("llp", root, "train")
    full = PreFMConfig(**{**cfg.to_dict(), "num_classes": 25})
    sel = PreFMFutureSelector(store, full)
    assert len(sel.selector.positions) == 4 * (20 - 5)
    assert sel.selector.positions[sel.window_id(1, 0), 0] == 20 + 1  # clip 1 starts at second 20
    fut = torch.randn(3, 5, 2, 25)
    mask = sel.mask(torch.tensor([[0], [5], [17]]), fut, torch.zeros(3, 5, 2, 25))
    assert mask.shape == fut.shape and 0.5 < mask.float().mean() < 0.85
    with pytest.raises(ValueError):
        PreFMFutureSelector(store, PreFMConfig(**{**full.to_dict(), "use_future": False}))
    with pytest.raises(ValueError):
        TrainConfig(future_loss="focal")


def test_train_prefm_future_loss_flag(tmp_path):
    root = generate(tmp_path / "syn", {"train": 6, "val": 2, "test": 2}, video_num=2)
    rc = train_main(["--layout", "llp", "--root", str(root), "--future-loss", "selective", "--epochs", "2",
                     "--batch-size", "16", "--warmup", "1", "--val-every", "1", "--quiet", "--no-distill",
                     "--out", str(tmp_path / "runs")])
    assert rc == 0
    model, _, meta = load_checkpoint(tmp_path / "runs" / "prefm.pt")
    assert meta["train"]["future_loss"] == "selective"
    scores = future_scores(model, ClipStore("llp", root, "test"))
    assert set(scores) == {f"future_f1_h{h}" for h in range(1, 6)} | {"future_f1_mean"}
    shares = mask_shares(model, ClipStore("llp", root, "train"))
    assert 0.0 < shares["kept_pos"] <= 1.0 and 0.2 < shares["kept_neg"] < 0.8


def test_direction_selective_beats_plain_mse_on_corrupted_series():
    for seed in (0, 1):
        s = synthetic_series(seed, length=2000)
        train = make_windows([s.values], 96, 24, [(0, s.train_end)])
        test = make_windows([s.values], 96, 24, [(s.train_end, 2000)])
        res = {}
        for loss in ("mse", "selective"):
            model, log = fit_forecaster(train, ForecastConfig(hidden=128, epochs=8, loss=loss), seed=seed)
            res[loss] = forecast_mse(model, test)
        assert res["selective"] < 0.85 * res["mse"]
        assert 0.4 < log.kept_overall < 0.7  # both masks really dropped steps
