"""Alchemist: the diffusion estimator ranks mis-captioned samples low, and the corpus curation finds them."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from training.methods.alchemist.curate import main
from training.methods.alchemist.diffusion import Denoiser, sample, train_denoiser
from training.methods.alchemist.estimator import cond_gain, standardise_by_caption, top_k
from training.methods.alchemist.pool import N_CLASSES, TIERS, digits_split, make_pool


@pytest.fixture(scope="module")
def trained():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    src, labels, _, _ = digits_split(0)
    model = Denoiser(64, N_CLASSES, token_dim=16, width=32)
    caps = torch.tensor(np.eye(N_CLASSES, dtype=np.float32)[labels])
    train_denoiser(model, torch.tensor(src), caps, 150, batch=64)
    return model, src, labels


def test_caption_gain_prefers_true_captions(trained):
    model, src, labels = trained
    x = torch.tensor(src[:200])
    true = torch.tensor(np.eye(N_CLASSES, dtype=np.float32)[labels[:200]])
    wrong = torch.tensor(np.eye(N_CLASSES, dtype=np.float32)[(labels[:200] + 3) % N_CLASSES])
    g_true, g_wrong = cond_gain(model, x, true, draws=2), cond_gain(model, x, wrong, draws=2)
    assert g_true.mean() > 0 > g_wrong.mean()
    assert np.mean(g_true > g_wrong) > 0.8


def test_pool_tiers_and_sampler_shapes(trained):
    model, src, labels = trained
    pool = make_pool(src, labels, 400, 0)
    assert set(np.unique(pool.tiers)) == set(TIERS.values())
    is_src_row = (np.abs(pool.images[:, None, :] - src[None, :, :]).max(-1) < 1e-6).any(1)
    assert is_src_row[pool.tiers == TIERS["miscaptioned"]].all() and is_src_row[pool.tiers == TIERS["clean"]].all()
    assert not is_src_row[pool.tiers == TIERS["noisy"]].any()
    out = sample(model, torch.tensor(pool.one_hot()[:7]), guidance=2.0)
    assert out.shape == (7, 64) and torch.isfinite(out).all()


def test_standardise_by_caption_and_top_k():
    caps = np.eye(2, dtype=np.float32)[[0, 0, 0, 1, 1, 1]]
    raw = np.array([10.0, 11.0, 12.0, 0.0, 1.0, 2.0])
    z = standardise_by_caption(raw, caps)
    assert np.allclose(z[:3], z[3:])
    assert list(top_k(raw, 2)) == [2, 1]


def _corpus(root, clips: dict[str, bool], rng) -> None:
    protos = rng.normal(0, 1, (3, 20))
    (root / "data_info").mkdir(parents=True)
    rows = ["filename,length"]
    for clip, honest in clips.items():
        cls = rng.integers(0, 3, 12)
        feats = protos[cls] + rng.normal(0, 0.3, (12, 20))
        labels = np.zeros((12, 25), np.float32)
        labels[np.arange(12), cls if honest else (cls + 1) % 3] = 1
        for sub, arr in (("embedded/visual", feats.astype(np.float32)), ("label/label/visual", labels)):
            (root / sub).mkdir(parents=True, exist_ok=True)
            np.save(root / sub / f"{clip}.npy", arr)
        rows.append(f"{clip},12")
    (root / "data_info" / "train_pd.csv").write_text("\n".join(rows) + "\n")


def test_corpus_command_ranks_the_mislabelled_clip_last(tmp_path):
    clips = {f"clip{i:04d}": i != 3 for i in range(8)}
    _corpus(tmp_path / "corpus", clips, np.random.default_rng(1))
    out = tmp_path / "curated.json"
    assert main(["--corpus", str(tmp_path / "corpus"), "--k", "8", "--steps", "80", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert [c["clip"] for c in doc["clips"]][-1] == "clip0003"
    assert len(doc["seconds"]) == 8 and all(s["clip"] != "clip0003" for s in doc["seconds"])
    assert main(["--corpus", str(tmp_path / "missing"), "--k", "3"]) == 2
