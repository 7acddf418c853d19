"""CMDP primal-dual: exact tools, learning direction in both modes, and the live latency-budget controller."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from models.cmdp.controller import BudgetConfig, BudgetController
from models.cmdp.pipeline_model import ACTIONS, PipelineModelConfig, cpu_ms, quality
from models.cmdp.primal_dual import PrimalDualConfig
from models.cmdp.tabular import evaluate, greedy, lp_optimum, min_cost, random_cmdp, unconstrained_cost
from training.methods.cmdp.experiment import learn, pipeline_cmdp, stream


@pytest.fixture(scope="module")
def small():
    return random_cmdp(np.random.default_rng(3), S=4, A=2, horizon=4)


def test_lp_matches_dynamic_programming_when_the_budget_is_loose_and_binds_when_tight(small):
    best = float(evaluate(small.P, small.r, small.mu, greedy(small.P, small.r, small.horizon)[None])[0])
    assert lp_optimum(replace(small, budget=small.horizon)) == pytest.approx(best, rel=1e-6)
    assert lp_optimum(small) < best - 1e-3
    assert min_cost(small) < small.budget < unconstrained_cost(small)


@pytest.mark.parametrize("mode", ["relaxed", "strict"])
def test_gap_shrinks_and_output_stays_in_budget(small, mode):
    vstar = lp_optimum(small)
    vr, vc = learn(small, mode, 800, seed=1)
    early, late = (vstar - vr[50:100].mean()) / vstar, (vstar - vr[400:800].mean()) / vstar
    assert late < 0.6 * early, (early, late)
    if mode == "strict":
        assert vc[400:800].mean() <= small.budget
    else:
        assert vc[400:800].mean() <= 1.05 * small.budget


def test_strict_pays_reward_for_a_lower_cost(small):
    relaxed_r, relaxed_c = learn(small, "relaxed", 400, seed=2)
    strict_r, strict_c = learn(small, "strict", 400, seed=2)
    assert strict_c[200:].mean() < relaxed_c[200:].mean()
    assert strict_r[200:].mean() < relaxed_r[200:].mean()


def test_pipeline_model_follows_the_knobs():
    cfg = PipelineModelConfig()
    full2, full1, half, audio = ACTIONS
    for busy in (False, True):
        assert cpu_ms(cfg, full2, busy) > cpu_ms(cfg, full1, busy) > cpu_ms(cfg, half, busy) > cpu_ms(cfg, audio, busy)
        assert quality(cfg, full2, busy) > quality(cfg, full1, busy) > quality(cfg, half, busy) > quality(cfg, audio, busy)
    assert cpu_ms(cfg, audio, True) > cpu_ms(cfg, audio, False)  # Whisper runs on speech
    m = pipeline_cmdp()
    np.testing.assert_allclose(m.P.sum(-1), 1.0)
    assert min_cost(m) < m.budget < unconstrained_cost(m)


def test_controller_keeps_a_simulated_stream_in_budget_and_adapts():
    m = pipeline_cmdp()
    live = stream(m, 800, seed=0)
    assert live["mean_latency_s"] <= live["budget_s"]
    ctl = BudgetController(BudgetConfig(latency_budget_s=0.5, max_fps=1.0))
    assert {a.fps for a in ctl.actions} == {1.0, 0.5, 0.0}  # never above the decoder's rate
    chosen = set()
    for t in range(300):  # a machine that is always late: the controller must learn to shed visual work
        action = ctl.decide(t)
        chosen.add(action)
        ctl.observe(t, latency_s=3.0 if action.tier == "full" else 0.3, busy=True, load=2.0)
    assert len(chosen) > 1 and ctl.learner.lam > 0
    late = [h["tier"] for h in list(ctl.history)[-100:]]
    assert late.count("speech+tags") > 50


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError):
        PrimalDualConfig(mode="lenient")
    with pytest.raises(ValueError):
        BudgetConfig(latency_budget_s=0)
