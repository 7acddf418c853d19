"""Collective counterfactuals: the plan moves every negative's mass, the marginal price moves the recommendations
from nearest-positive to the positive population, the one-by-one projection lands on the margin, and the risk
gate's rows are explained collectively (valid, much closer to equilibrium, fixed features kept)."""

from __future__ import annotations

import numpy as np
import pytest

from models.safety.risk_gate import RiskGate
from training.methods.cce.gate import SCORE_NAMES, explain_gate, gate_feature_names, readable_only, summarise
from training.methods.cce.metrics import bandwidth, mean_cost, mmd
from training.methods.cce.recourse import LinearModel, individual_counterfactuals, nearest_positive
from training.methods.cce.transport import barycentric_targets, collective_plan


def _populations(seed: int = 0, n: int = 300, dim: int = 2):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.5).astype(int)
    x = rng.normal(size=(n, dim)) * 1.3 + np.where(y[:, None] == 1, 1.0, -1.0)
    gate = RiskGate.fit(x.astype(np.float32), y, np.ones(n, np.float32), [str(i) for i in range(n)], c=1.0, folds=2)
    model = LinearModel.from_gate(gate)
    accepted = model.logit(model.standardise(x)) >= 0
    return gate, model, x[~accepted], x[accepted]


def test_plan_moves_all_mass_and_rho_moves_from_nearest_to_population():
    rng = np.random.default_rng(1)
    neg, pos = rng.normal(size=(60, 2)), rng.normal(size=(80, 2)) + [3.0, 0.0]
    loose = collective_plan(neg, pos, rho=1e-3, eps=5e-4)
    tight = collective_plan(neg, pos, rho=100.0)
    np.testing.assert_allclose(loose.sum(1), 1 / 60, rtol=1e-3)
    np.testing.assert_allclose(tight.sum(1), 1 / 60, rtol=1e-3)
    np.testing.assert_allclose(tight.sum(0), 1 / 80, rtol=0.05)  # nearly balanced: the positives' marginal
    near = barycentric_targets(loose, pos)
    # rho -> 0: everyone goes (softly) to their nearest positives, at about the nearest positive's cost
    assert mean_cost(neg, near) <= 1.1 * mean_cost(neg, nearest_positive(neg, pos))
    width = bandwidth(pos)
    assert mmd(barycentric_targets(tight, pos), pos, width) < 0.5 * mmd(near, pos, width)


def test_projection_lands_on_the_margin_along_mutable_features():
    _, model, neg, _ = _populations()
    u = model.standardise(neg)
    out = individual_counterfactuals(u, model, margin=0.5)
    np.testing.assert_allclose(model.logit(out), 0.5, atol=1e-9)
    only_first = np.array([True, False])
    out1 = individual_counterfactuals(u, model, 0.5, only_first)
    np.testing.assert_array_equal(out1[:, 1], u[:, 1])
    np.testing.assert_allclose(model.logit(out1), 0.5, atol=1e-9)


def test_gate_explained_collectively_is_valid_and_near_equilibrium():
    gate, model, neg, pos = _populations(seed=2, n=400)
    rec = explain_gate(gate, neg, pos, rho=1.0)
    u_neg, u_pos = model.standardise(neg), model.standardise(pos)
    individual = individual_counterfactuals(u_neg, model, 0.5)
    width = bandwidth(u_pos)
    assert np.all(rec.probability >= 0.5)
    assert mmd(model.standardise(rec.targets), u_pos, width) <= 0.25 * mmd(individual, u_pos, width)
    assert rec.cost.mean() <= 2.5 * mean_cost(u_neg, individual)
    np.testing.assert_allclose(rec.changes, rec.targets - neg)
    assert rec.exemplar.shape == (len(neg),) and rec.exemplar.max() < len(pos)
    fixed = explain_gate(gate, neg, pos, rho=1.0, mutable=np.array([False, True]))
    np.testing.assert_allclose(fixed.changes[:, 0], 0.0, atol=1e-9)
    assert np.all(fixed.probability >= 0.5 - 1e-9)
    table = summarise(rec, model.scale, ["a", "b"], top=2)
    assert {r["feature"] for r in table} == {"a", "b"} and all(0 <= r["share_raised"] <= 1 for r in table)


def test_gate_feature_names_follow_the_gate_layout():
    names = gate_feature_names(18 + 2 * 384)
    assert names[:3] == ["total", "newest_segment", "margin"] and names[3] == "tf_newest"
    assert names[17] == "act_rule_change" and names[18] == "minilm_newest[0]" and names[-1] == "minilm_change[383]"
    assert readable_only(786).sum() == len(SCORE_NAMES) == 18
    with pytest.raises(ValueError):
        gate_feature_names(19)
