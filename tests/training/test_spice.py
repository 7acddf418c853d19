"""SPiCE: symmetry of the network, what its parts compute, and the committed result's direction (seconds)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from training.methods.spice import conformers
from training.methods.spice.conformers import N_FEATURES, Ensembles, boltzmann
from training.methods.spice.model import Spice, SpiceConfig
from training.methods.spice.moe import GeometricMoE
from training.methods.spice.train import fit, pick_conformers, random_orthogonal, symmetry_error

RESULT = Path(__file__).resolve().parents[2] / "docs" / "results" / "training" / "spice.json"


@pytest.fixture(scope="module")
def data() -> Ensembles:
    torch.set_num_threads(1)
    rows = [r for i, smi in enumerate(conformers.small_flexible(8)) if (r := conformers.embed(smi, 3, i))][:6]
    k, n = len(rows), conformers.MAX_ATOMS
    pos = torch.zeros(k, 3, n, 3)
    feats, adj, mask = torch.zeros(k, n, N_FEATURES), torch.zeros(k, n, n), torch.zeros(k, n, dtype=torch.bool)
    for j, r in enumerate(rows):
        a = r["features"].shape[0]
        pos[j, :, :a] = torch.tensor(r["pos"], dtype=torch.float32)
        feats[j, :a], mask[j, :a] = torch.tensor(r["features"], dtype=torch.float32), True
        for b, c in r["bonds"]:
            adj[j, b, c] = adj[j, c, b] = 1.0
    props = torch.tensor(np.stack([r["props"] for r in rows]), dtype=torch.float32)
    energy = torch.tensor(np.stack([r["energy"] for r in rows]), dtype=torch.float32)
    targets = torch.tensor(boltzmann(props.numpy().transpose(0, 2, 1), energy.numpy()[:, None]))
    return Ensembles([f"m{j}" for j in range(k)], pos, feats, adj, mask, energy, props, targets).for_property("gyration")


def _model(blocks: int = 2) -> Spice:
    torch.manual_seed(0)
    model = Spice(SpiceConfig(N_FEATURES, channels=8, blocks=blocks, n_experts=3, top_k=2))
    model.upcycle()
    # break the copies apart so that routing matters
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return model


def test_conformers_differ_and_the_target_is_their_boltzmann_average(data):
    assert (data.pos[:, 0] - data.pos[:, 1]).abs().amax((-1, -2)).max() > 0.5  # ETKDG gives distinct conformers
    v, e = np.array([[1.0, 3.0]]), np.array([[0.0, conformers.KT_KCAL * np.log(3.0)]])
    assert boltzmann(v, e)[0] == pytest.approx((1.0 * 3 + 3.0 * 1) / 4)


def test_per_conformer_rotations_translations_and_shuffles_change_nothing(data):
    model = _model().double()
    err = symmetry_error(model, data, seed=3)
    assert max(err.values()) < 1e-10, err


def test_output_depends_on_every_conformers_geometry(data):
    model = _model().eval()
    pos = data.pos.clone()
    base = model(pos, data.features, data.adj, data.mask)[0]
    pos[:, 2, 0] += 0.3  # move one atom of the last conformer only (not a rigid motion)
    assert (model(pos, data.features, data.adj, data.mask)[0] - base).abs().max() > 1e-4
    x, v, _ = model.encode(data.pos, data.features, data.adj, data.mask)
    assert v.abs().max() > 1e-3 and x.abs().max() > 1e-3  # vectors are live, not zero


def test_a_reflection_of_one_conformer_reflects_its_vectors(data):
    model = _model().double().eval()
    pos = data.pos.double()
    flip = torch.diag(torch.tensor([-1.0, 1.0, 1.0], dtype=torch.float64))
    moved = pos.clone()
    moved[:, 1] = pos[:, 1] @ flip
    args = (data.features.double(), data.adj.double(), data.mask)
    _, v0, _ = model.encode(pos, *args)
    _, v1, _ = model.encode(moved, *args)
    assert torch.allclose(v1[:, 1], flip @ v0[:, 1], atol=1e-10)
    assert torch.allclose(v1[:, 0], v0[:, 0], atol=1e-10)


def test_moe_routes_each_atom_to_top_k_experts_and_upcycles_from_expert_0():
    moe = GeometricMoE(8, n_experts=4, top_k=2)
    w = moe._weights(torch.rand(5, 4))
    assert torch.allclose(w.sum(-1), torch.ones(5)) and ((w > 0).sum(-1) == 2).all()
    moe.upcycle()
    assert not moe.dense
    for e in moe.experts_x[1:]:
        for a, b in zip(e.parameters(), moe.experts_x[0].parameters(), strict=True):
            assert torch.equal(a, b)


def test_random_orthogonal_is_orthogonal_with_both_determinants():
    q = random_orthogonal((200,), torch.Generator().manual_seed(0))
    assert torch.allclose(q @ q.transpose(-1, -2), torch.eye(3, dtype=q.dtype).expand(200, 3, 3), atol=1e-12)
    det = torch.linalg.det(q)
    assert (det > 0).any() and (det < 0).any()


def test_single_conformer_modes_pick_one_conformer(data):
    gen = torch.Generator().manual_seed(0)
    assert pick_conformers(data, "all", gen).shape[1] == 3
    lowest = pick_conformers(data, "lowest", gen)
    assert lowest.shape[1] == 1
    assert torch.equal(lowest[:, 0], data.pos[torch.arange(len(data)), data.energy.argmin(1)])


def test_training_lowers_the_loss(data):
    model = _model(blocks=1)
    fresh = copy.deepcopy(model)
    losses = fit(model, data, "all", epochs=6, seed=0, batch=3, lr=1e-2, upcycle_at=2)
    assert losses[-1] < losses[0]
    assert any((a != b).any() for a, b in zip(model.parameters(), fresh.parameters(), strict=True))


def test_committed_result_held_with_the_ensemble_ahead():
    doc = json.loads(RESULT.read_text())
    assert doc["method"] == "spice" and doc["held"]
    f = doc["figures"]
    assert f["test_mae_spice"] + f["test_mae_spice_sd"] < f["test_mae_random"] - f["test_mae_random_sd"]
    assert f["symmetry_error_float64"] < 1e-5
    seeds = {r["seed"] for r in doc["rows"] if r["model"] == "SPiCE ensemble"}
    assert seeds >= {0, 1, 2, "mean +- sd"}  # three seeds and their summary, not one chosen run
