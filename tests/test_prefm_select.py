"""Issue 11's training fixes: several windows per clip per epoch, and selection on pooled per-class audio F1."""

import numpy as np
import pytest
import torch

import training.prefm.trainer as trainer
from models.prefm.metrics import pooled_class_f1
from models.prefm.modeling_prefm import preset
from models.prefm.online import load_checkpoint
from training.prefm.cli import train_main
from training.prefm.data import ClipStore
from training.prefm.synthetic import generate
from training.prefm.trainer import TrainConfig, evaluate, model_config_for, train

torch.set_num_threads(1)


def _col(*runs, length=8):
    """A (length, 2) multi-hot array: class c is positive over the [start, end) spans of runs[c]."""
    y = np.zeros((length, 2), np.int64)
    for c, spans in enumerate(runs):
        for s, e in spans:
            y[s:e, c] = 1
    return y


def test_pooled_class_f1_by_hand():
    gts = [_col([(0, 3)], []), _col([(2, 5)], [])]
    preds = [_col([(0, 3)], [(5, 7)]), _col([], [])]
    # class 0: one TP (video 1), one FN (video 2) -> 2/3; class 1 has no true event -> left out
    assert pooled_class_f1(preds, gts, 5) == pytest.approx({0: 2 / 3})
    assert pooled_class_f1([np.zeros_like(g) for g in gts], gts, 5) == {0: 0.0}
    assert pooled_class_f1([], [], 5) == {}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return generate(tmp_path_factory.mktemp("syn"), {"train": 8, "val": 4, "test": 2}, video_num=2, seed=5)


def test_empty_model_scores_zero_audio_f1(corpus, monkeypatch):
    va = ClipStore("llp", corpus, "val")
    monkeypatch.setattr(trainer, "predict_clip",
                        lambda model, clip, variant: {m: np.zeros_like(y) for m, y in clip.labels.items()})
    out = evaluate(None, va, "prefm")
    assert out["audio_f1_05"] == 0.0
    assert out["videos"] == len(va)


@pytest.mark.parametrize("variant", ["prefm", "offline"])
def test_windows_per_clip_multiplies_samples(corpus, variant):
    tr = ClipStore("llp", corpus, "train")
    cfg = model_config_for(tr, preset("small", d_model=16, ff=32, layers=1), variant)
    one = trainer._epoch_samples(tr, cfg, TrainConfig(variant=variant), np.random.default_rng(0))
    three = trainer._epoch_samples(tr, cfg, TrainConfig(variant=variant, windows_per_clip=3), np.random.default_rng(0))
    assert len(one) >= len(tr) and len(three) == 3 * len(one)


def test_config_rejects_bad_options():
    with pytest.raises(ValueError):
        TrainConfig(select="loss")
    with pytest.raises(ValueError):
        TrainConfig(windows_per_clip=0)


def test_train_selects_on_audio_f1(corpus, tmp_path):
    tr, va = ClipStore("llp", corpus, "train"), ClipStore("llp", corpus, "val")
    base = preset("small", d_model=16, ff=32, layers=1)
    res = train(base, tr, va, TrainConfig(epochs=4, batch_size=16, lr=2e-3, warmup_epochs=1, val_every=1,
                                          progress=False, windows_per_clip=2, select="audio_f1"), tmp_path / "p.pt")
    scores = [(r["val_audio_f1_05"], r["val_mean_evt_f1"]) for r in res.history]
    assert (res.best_val["audio_f1_05"], res.best_val["mean_evt_f1"]) == max(scores)
    _, _, meta = load_checkpoint(res.checkpoint)
    assert meta["epoch"] == res.best_epoch and meta["train"]["select"] == "audio_f1"
    assert meta["train"]["windows_per_clip"] == 2


def test_cli_options(corpus, tmp_path, capsys):
    rc = train_main(["--root", str(corpus), "--epochs", "1", "--batch-size", "32", "--d-model", "16", "--ff", "32",
                     "--layers", "1", "--warmup", "1", "--val-every", "1", "--quiet", "--windows-per-clip", "2",
                     "--select", "audio_f1", "--out", str(tmp_path)])
    assert rc == 0 and "audio F1@0.5" in capsys.readouterr().out
