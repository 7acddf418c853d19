"""Fair representations: the characteristic-function distance is the Gaussian-kernel MMD it should be and
vanishes for equal groups; the fair head blinds a probe to the camera and narrows the decision gap at small
cost; the head round-trips through a file and reads Foresight's cached per-second embeddings."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from training.methods.fairness.cf import cf_distance, ecf, moment_distance, sample_frequencies
from training.methods.fairness.data import camera_embeddings
from training.methods.fairness.embeddings import per_second_embeddings
from training.methods.fairness.head import FairConfig, FairHead, fit_fair_head
from training.methods.fairness.metrics import dp_gap, probe_auc


def test_ecf_distance_is_the_gaussian_kernel_mmd():
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(40, 3, generator=gen), torch.randn(50, 3, generator=gen) * 1.5 + 0.5
    sigma = 0.7
    t = sample_frequencies(200_000, 3, sigma, gen)
    by_frequencies = (ecf(a, t) - ecf(b, t)).pow(2).sum(0).mean()

    def k(u, v):
        return torch.exp(-(sigma**2) * torch.cdist(u, v).pow(2) / 2).mean()

    mmd2 = k(a, a) + k(b, b) - 2 * k(a, b)
    assert float(by_frequencies) == pytest.approx(float(mmd2), rel=0.03)


def test_distances_vanish_for_equal_groups_and_grow_with_a_shift():
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(1)
    z = torch.randn(200, 4, generator=gen)
    same = torch.cat([z, z])
    groups = torch.cat([torch.zeros(200), torch.ones(200)]).long()
    t = sample_frequencies(64, 4, 1.0, gen)
    assert float(cf_distance(same, groups, t)) < 1e-10 and float(moment_distance(same, groups)) < 1e-8
    spread = torch.cat([z, z * 2.0])  # same mean, different spread
    assert float(cf_distance(spread, groups, t)) > 1e-3


def test_fair_head_blinds_the_probe_and_narrows_the_gap():
    """Reduced experiment: smaller splits and shorter training; the direction must hold."""
    torch.set_num_threads(1)
    train, test = camera_embeddings(2000, 0), camera_embeddings(1500, 1)
    out = {}
    for penalty, lam in (("none", 0.0), ("cf", 30.0)):
        head = fit_fair_head(train.x, train.y, train.camera, FairConfig(penalty=penalty, lam=lam, epochs=10,
                                                                        sigma=0.5))
        pred = (head.predict_proba(test.x) > 0.5).astype(int)
        out[penalty] = (float(np.mean(pred == test.y)), dp_gap(pred, test.camera),
                        probe_auc(head.represent(train.x), train.camera, head.represent(test.x), test.camera, "mlp"))
    (acc0, gap0, auc0), (acc1, gap1, auc1) = out["none"], out["cf"]
    assert auc1 <= 0.65 and auc0 - auc1 >= 0.15, (auc0, auc1)
    assert gap1 <= 0.7 * gap0, (gap0, gap1)
    assert acc1 >= acc0 - 0.03, (acc0, acc1)


def test_head_reads_cached_embeddings_and_round_trips(tmp_path):
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    for vid, seconds in (("cam_a", 30), ("cam_b", 25)):
        for modality, dim in (("visual", 6), ("audio", 4)):
            (tmp_path / "embedded" / modality).mkdir(parents=True, exist_ok=True)
            np.save(tmp_path / "embedded" / modality / f"{vid}.npy", rng.normal(size=(seconds, dim)).astype(np.float32))
    x, owner = per_second_embeddings(tmp_path, ["cam_a", "cam_b"])
    assert x.shape == (55, 10) and list(np.bincount(owner)) == [30, 25]
    y = (x[:, 0] > 0).astype(int)
    head = fit_fair_head(x, y, owner, FairConfig(epochs=3, dim=4, hidden=16, batch=16))
    again = FairHead.load(head.save(tmp_path / "fair_head.pt"))
    np.testing.assert_allclose(again.represent(x), head.represent(x), atol=1e-6)
    assert again.represent(x).shape == (55, 4)
    with pytest.raises(FileNotFoundError):
        per_second_embeddings(tmp_path, ["missing"])
    with pytest.raises(ValueError):
        fit_fair_head(x, y, np.zeros(len(x)), FairConfig(epochs=1))
