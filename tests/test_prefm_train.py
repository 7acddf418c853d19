"""PreFM losses, schedule, trainer and CLI on a tiny synthetic corpus."""

import json

import numpy as np
import pytest
import torch

from models.prefm.modeling_prefm import PreFM, PreFMConfig, preset
from models.prefm.online import load_checkpoint
from training.prefm.cli import eval_main, train_main
from training.prefm.data import ClipStore
from training.prefm.losses import (
    cosine_distillation,
    gaussian_weights,
    prefm_loss,
    temporal_weights,
    weighted_bce,
)
from training.prefm.synthetic import generate
from training.prefm.trainer import TrainConfig, evaluate, lr_at_epoch, train

torch.set_num_threads(1)


def test_gaussian_weights_match_the_authors_values():
    cur, fut = temporal_weights("avel", 10, 5)
    np.testing.assert_allclose(cur.numpy(), [.275, .394, .543, .718, .913, 1.115, 1.308, 1.475, 1.598, 1.663], atol=2e-3)
    np.testing.assert_allclose(fut.numpy(), [1.636, 1.394, 1.013, .627, .330], atol=2e-3)
    cur, fut = temporal_weights("avvp", 10, 5)
    assert cur[0].item() == pytest.approx(0.12, abs=5e-3) and cur[-1].item() == pytest.approx(2.004, abs=2e-3)
    np.testing.assert_allclose(fut.numpy(), [2.004, 1.882, 1.661, 1.377, 1.072], atol=2e-3)
    assert gaussian_weights(20, 9.5, 4).sum().item() == pytest.approx(20.0)


def test_weighted_bce_and_cosine_distillation_by_hand():
    logits = torch.zeros(1, 2, 1)
    targets = torch.tensor([[[1.0], [0.0]]])
    w = torch.tensor([1.0, 3.0])
    # BCE(0, y) = ln 2 for both positions -> mean(w) * ln 2
    assert weighted_bce(logits, targets, w).item() == pytest.approx(2.0 * np.log(2))
    s = torch.tensor([[[1.0, 0.0], [1.0, 0.0]]])
    t = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])  # cos = 1 then 0
    assert cosine_distillation(s, t, w).item() == pytest.approx((1 * 0 + 3 * 1) / 2)


def test_prefm_loss_uses_future_labels_and_teacher():
    torch.manual_seed(0)
    cfg = PreFMConfig(audio_dim=6, visual_dim=6, num_classes=3, d_model=8, ff=16, layers=1, heads=2, teacher_dim=5)
    model = PreFM(cfg)
    out = model(torch.randn(2, 10, 6), torch.randn(2, 10, 6))
    labels = torch.zeros(2, 15, 2, 3)
    base = prefm_loss(model, out, labels, torch.randn(2, 15, 2, 5))
    labels2 = labels.clone()
    labels2[:, 12] = 1.0  # change only a future label
    assert prefm_loss(model, out, labels2).cls.item() != pytest.approx(base.cls.item())
    assert base.kd_current.item() > 0 and base.kd_future.item() > 0
    assert prefm_loss(model, out, labels, None).kd_current.item() == 0.0
    nofut = PreFM(PreFMConfig(**{**cfg.to_dict(), "use_future": False}))
    terms = prefm_loss(nofut, nofut(torch.randn(2, 10, 6), torch.randn(2, 10, 6)), labels2)
    assert terms.kd_future.item() == 0.0


def test_warmup_cosine_schedule():
    cfg = TrainConfig(epochs=60, lr=5e-4, lr_min=5e-6, warmup_epochs=10)
    assert lr_at_epoch(1, cfg) == pytest.approx(5e-5)
    assert lr_at_epoch(10, cfg) == pytest.approx(5e-4)
    assert lr_at_epoch(60, cfg) == pytest.approx(5e-6)
    assert lr_at_epoch(35, cfg) == pytest.approx(5e-6 + 0.5 * (5e-4 - 5e-6))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return generate(tmp_path_factory.mktemp("syn"), {"train": 24, "val": 6, "test": 6}, video_num=2, seed=3)


def test_training_learns_and_keeps_best_checkpoint(corpus, tmp_path):
    tr, va = ClipStore("llp", corpus, "train"), ClipStore("llp", corpus, "val")
    base = preset("small", d_model=32, ff=64, layers=1)
    untrained = evaluate(PreFM(PreFMConfig.from_dict({**base.to_dict(), **tr.dims(), "class_names": tr.class_names})), va, "prefm")
    result = train(base, tr, va, TrainConfig(epochs=12, batch_size=16, lr=2e-3, lr_min=1e-4, warmup_epochs=2,
                                             val_every=4, progress=False), tmp_path / "prefm.pt")
    assert result.history[-1]["loss"] < result.history[0]["loss"]
    model, cfg, meta = load_checkpoint(result.checkpoint)
    assert meta["variant"] == "prefm" and meta["epoch"] == result.best_epoch
    assert cfg.teacher_dim == 48 and cfg.audio_dim == 32 and cfg.class_names[0] == "Speech"
    assert evaluate(model, va, "prefm")["mean_evt_f1"] == pytest.approx(result.best_val["mean_evt_f1"])
    assert result.best_val["mean_evt_f1"] > untrained["mean_evt_f1"]


def test_cli_train_and_eval_three_variants(corpus, tmp_path, capsys):
    out = tmp_path / "ck"
    rc = train_main(["--layout", "llp", "--root", str(corpus), "--variant", "all", "--epochs", "2", "--batch-size", "32",
                     "--d-model", "16", "--ff", "32", "--layers", "1", "--warmup", "1", "--val-every", "1", "--quiet",
                     "--out", str(out)])
    assert rc == 0
    assert sorted(p.name for p in out.iterdir()) == ["nofuture.pt", "offline.pt", "prefm.pt"]
    capsys.readouterr()
    assert eval_main(["--layout", "llp", "--root", str(corpus), "--checkpoints", str(out), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert set(res) == {"prefm", "nofuture", "offline"}
    for r in res.values():
        assert 0.0 <= r["evt_f1_avg_av"] <= 100.0 and "type_av_seg" in r and "event_av_seg" in r
    assert eval_main(["--root", str(corpus), "--checkpoints", str(out)]) == 0
    table = capsys.readouterr().out
    assert "PreFM (online)" in table and "offline (whole clip)" in table and "Type@AV" in table


def test_cli_bad_input_returns_2(tmp_path, capsys):
    assert train_main(["--root", str(tmp_path / "missing"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and err.count("\n") == 1
    assert eval_main(["--root", str(tmp_path), "--checkpoints", str(tmp_path / "none")]) == 2
    assert train_main(["--root", str(tmp_path), "--variant", "bogus", "--out", str(tmp_path / "o")]) == 2
