"""ME-/AB-POMDPs: solvers against brute force, the LPs, the reduction, robustness on Tiger and the
escalation model, and the monitor's escalation option (seconds)."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from models.safety import SafetyConfig, SafetyMonitor
from models.safety.escalation import ESCALATION_FILE, EscalationPolicy, alert_severity
from models.safety.knowledge import load_rules
from models.safety.logparse import Segment
from models.safety.retrieval import RuleRetriever
from training.methods.pomdp.escalation import policy_document, solve_escalation
from training.methods.pomdp.gate_sensors import add_spurious, load, settings_of
from training.methods.pomdp.model import POMDP, environment_block, product
from training.methods.pomdp.plans import evaluate, simulate
from training.methods.pomdp.problems import (
    bin_counts,
    environments,
    me_escalation,
    me_tiger,
    sensor_model,
    tiger,
)
from training.methods.pomdp.robust import robust_mixture, single_environment, solve, worst_case_prior
from training.methods.pomdp.solvers import exact_plans, point_based_plans, reachable_beliefs


def all_plan_values(pomdp: POMDP, horizon: int) -> np.ndarray:
    """Values [plans, S] of every conditional plan of `horizon` steps, by enumeration."""
    if horizon == 1:
        return pomdp.R.copy()
    sub = all_plan_values(pomdp, horizon - 1)
    out = []
    for a in range(pomdp.n_actions):
        for choice in itertools.product(range(len(sub)), repeat=pomdp.n_observations):
            future = np.stack([sub[k] for k in choice], 1)                  # [S', Z]
            weighted = (pomdp.O[a] * future).sum(1)                          # [S']
            out.append(pomdp.R[a] + pomdp.discount * pomdp.T[a] @ weighted)
    return np.array(out)


@pytest.fixture(scope="module")
def tiger_product():
    return product(me_tiger())


def test_exact_value_iteration_equals_brute_force_plans(tiger_product):
    pomdp, _ = tiger_product
    beliefs = np.random.default_rng(0).dirichlet(np.ones(pomdp.n_states), 200)
    brute = (beliefs @ all_plan_values(pomdp, 3).T).max(1)
    plans = exact_plans(pomdp, 3)
    assert np.allclose((beliefs @ plans.roots.T).max(1), brute, atol=1e-9)
    assert np.allclose(evaluate(plans, pomdp)[0], plans.roots)  # plan pointers reproduce the vectors


def test_point_based_is_a_lower_bound_that_is_tight_at_its_beliefs(tiger_product):
    pomdp, vertices = tiger_product
    beliefs = reachable_beliefs(pomdp, vertices, 60, 10, np.random.default_rng(1))
    exact, point = exact_plans(pomdp, 4), point_based_plans(pomdp, beliefs, 4)
    test = np.random.default_rng(2).dirichlet(np.ones(pomdp.n_states), 300)
    assert ((test @ point.roots.T).max(1) <= (test @ exact.roots.T).max(1) + 1e-9).all()
    assert np.allclose((beliefs @ point.roots.T).max(1), (beliefs @ exact.roots.T).max(1), atol=1e-9)


def test_the_two_lps_agree_and_answer_the_max_min_problem():
    m = np.random.default_rng(3).normal(size=(12, 3))
    v_primal, lam = worst_case_prior(m)
    v_dual, y = robust_mixture(m)
    assert v_primal == pytest.approx(v_dual, abs=1e-7)
    assert (y @ m).min() == pytest.approx(v_dual, abs=1e-7)     # the mixture guarantees v in every column
    assert (m @ lam).max() == pytest.approx(v_primal, abs=1e-7)  # no plan beats v against the adversary's prior
    assert v_dual >= m.min(1).max() - 1e-9                      # mixing never hurts the best pure plan


def test_product_blocks_and_plan_values_per_environment(tiger_product):
    pomdp, vertices = tiger_product
    me = me_tiger()
    assert np.allclose(pomdp.T[:, :2, 2:], 0) and np.allclose(pomdp.T[:, 2:, :2], 0)
    plans = point_based_plans(pomdp, vertices, 6)
    for i, env in enumerate(me.envs):
        # the product plan's value at vertex i is the plan run in environment i alone
        assert np.allclose(evaluate(plans, env)[0] @ me.initial[i],
                           environment_block(plans.roots, i, 2) @ me.initial[i])


def test_simulation_matches_the_exact_plan_value():
    env = tiger(0.85, 0.15)
    plans = point_based_plans(env, np.array([[0.5, 0.5], [0.9, 0.1], [0.1, 0.9], [0.97, 0.03], [0.03, 0.97]]), 8)
    root = plans.best_root(np.array([0.5, 0.5]))
    mean, se = simulate(plans, np.eye(len(plans.roots))[root], env, np.array([0.5, 0.5]), 20000,
                        np.random.default_rng(4))
    assert abs(mean - plans.roots[root] @ [0.5, 0.5]) < 4 * se + 1e-6


def test_tiger_robust_plan_beats_every_single_environment_plan_in_the_worst_case():
    me = me_tiger()
    sol = solve(me, 15, "point", n_beliefs=120, rounds=3)
    robust_worst = (sol.mixture @ sol.values).min()
    for i in range(me.n):
        plans = single_environment(me, i, 15, n_beliefs=120)
        root = plans.best_root(me.initial[i])
        worst = min(evaluate(plans, e)[0][root] @ b for e, b in zip(me.envs, me.initial, strict=True))
        assert robust_worst > worst + 5.0
    assert 0 < sol.prior[1] < 1  # the adversary mixes the two sensors: no single environment is the worst


def test_gate_histograms_make_sensor_models():
    assert bin_counts(list(range(20)), 20, (0.0, 0.5, 1.0)).tolist() == [45, 145]
    with pytest.raises(ValueError):
        bin_counts([1] * 20, 20, (0.0, 0.33, 1.0))
    measured = load()
    for h in measured["conditions"].values():
        s = sensor_model(h, measured["grid"])
        assert np.allclose(s.sum(1), 1) and s[1, -1] > s[0, -1] and s[0, 0] > s[1, 0]  # the gate separates


@pytest.mark.parametrize("envset", ["folds", "settings"])
def test_escalation_robust_policy_is_never_worse_than_a_single_sensor_policy_in_the_worst_case(envset):
    """The measured gate's sets are ordered (the held-out folds; a camera at home or away, each with its own
    measured hazard): one environment (the adversary's pick) is the hardest for every policy, so the robust
    policy is that environment's own policy and strictly beats the others' (docs/training/pomdp.md)."""
    me = me_escalation(load(), envset)
    sol = solve(me, 25, "point", n_beliefs=150, rounds=3)
    robust_worst = (sol.mixture @ sol.values).min()
    hardest = int(np.argmax(sol.prior))
    assert sol.prior[hardest] == pytest.approx(1.0)
    for i in range(me.n):
        plans = single_environment(me, i, 25, n_beliefs=150)
        root = plans.best_root(me.initial[i])
        worst = min(evaluate(plans, e)[0][root] @ b for e, b in zip(me.envs, me.initial, strict=True))
        if i == hardest:
            assert robust_worst == pytest.approx(worst, abs=1e-4)
        else:
            assert robust_worst > worst + (0.1 if envset == "folds" else 0.01)


def test_escalation_pace_set_is_not_ordered_and_the_robust_policy_beats_both_single_policies():
    """Scenes where trouble comes quickly (short logs: frequent risk, fewer false highs) or slowly (long logs:
    rare risk, more false highs) err in opposite directions: the adversary mixes and the robust policy's worst
    case beats both single-pace policies' (docs/training/pomdp.md)."""
    me = me_escalation(load(), "pace")
    sol = solve(me, 25, "point", n_beliefs=150, rounds=3)
    robust_worst = (sol.mixture @ sol.values).min()
    assert 0.5 < sol.prior[0] < 1 - 1e-6  # mostly the short scenes, but not all weight on one environment
    for i in range(me.n):
        plans = single_environment(me, i, 25, n_beliefs=150)
        root = plans.best_root(me.initial[i])
        worst = min(evaluate(plans, e)[0][root] @ b for e, b in zip(me.envs, me.initial, strict=True))
        assert robust_worst > worst + 0.1


def test_escalation_environment_sets_are_measured():
    measured = load()
    assert me_escalation(measured, "captioners").names == ("perturbed", "degraded", "spurious", "spurious_acts")
    home, away = (environments(measured, "settings")[w][1] for w in ("home", "away"))
    assert 0.1 < home < away < 0.4  # risk starts more often per segment away from home (as written)
    short, long = (environments(measured, "pace")[w][1] for w in ("short", "long"))
    assert short == pytest.approx(104 / 360) and long == pytest.approx(123 / 708)  # 1 / mean segments before risk
    with pytest.raises(ValueError):
        me_escalation(measured, "rooms")


def test_spurious_captioner_adds_other_logs_sentences_the_same_way_in_every_prefix():
    segs = [Segment("07:00", "Kitchen", "A kettle.", "She makes tea."), Segment("08:00", "Park", "Trees.", "He walks."),
            Segment("", "", "Grass.", "He sits.")]
    pool = [(0, "OWN SENTENCE."), (1, "A gas water heater.")]
    full = add_spurious(segs, pool, 0, seed=3, rate=1.0, field="environment")
    assert all(s.environment.endswith("A gas water heater.") and s.behavior == o.behavior
               for s, o in zip(full, segs, strict=True))  # never the log's own sentence, only the named field
    some = add_spurious(segs, pool, 0, seed=3, rate=0.5, field="behavior")
    assert add_spurious(segs[:2], pool, 0, seed=3, rate=0.5, field="behavior") == some[:2]
    assert add_spurious(segs, pool, 0, seed=3, rate=0.0) == segs
    assert settings_of(segs) == ["home", "away", "away"]


def test_shipped_escalation_policy_is_what_the_solver_writes():
    sol, names = solve_escalation()
    shipped = json.loads(ESCALATION_FILE.read_text())
    assert json.loads(json.dumps(policy_document(sol, names, "folds"))) == shipped


def test_escalation_policy_watches_warns_and_alarms():
    pol = EscalationPolicy.load()
    assert [pol.step(0.02) for _ in range(5)] == ["watch"] * 5
    levels = [pol.step(0.97) for _ in range(6)]
    assert "alarm" in levels and "watch" not in levels and pol.risk() > 0.8
    assert pol.step(0.02) == "watch" and pol.risk() < 0.2  # after an alarm, a calm segment: back to watching
    pol.reset()
    pol.step(0.02)
    before = pol.belief.copy()
    assert pol.would(0.97) in ("warn", "alarm") and np.array_equal(pol.belief, before)
    assert alert_severity("critical", "warn") == "warning" and alert_severity("info", "alarm") == "critical"


class ScriptedGate:
    """Stands in for the risk gate: returns the next scripted probability."""

    def __init__(self, values):
        self.values = list(values)

    def probability(self, analysis, log_text=None):
        return self.values.pop(0)


GAS = "Gas water heaters should not be installed in the living room, bathroom, or restroom."
CALM = Segment("07:00 AM", "Kitchen", "A kettle and bread on the counter.", "She makes tea and eats toast.")
RISK = Segment("05:30 PM", "Bathroom", "New gas water heater unit unboxed.",
               "She mounts the gas water heater on the bathroom wall and connects the gas hose.")


def test_monitor_default_is_unchanged_and_escalation_is_an_option():
    retriever = RuleRetriever(load_rules(), embedder=None)
    assert SafetyConfig().escalation is None
    assert SafetyMonitor(SafetyConfig(use_embeddings=False), retriever=retriever).escalation is None
    mon = SafetyMonitor(SafetyConfig(use_embeddings=False, escalation="robust", cooldown_s=600), retriever=retriever)
    mon.gate = ScriptedGate([0.02, 0.03, 0.6, 0.97, 0.97, 0.97, 0.97])
    alerts = []
    for t, seg in enumerate([CALM, CALM, RISK, RISK, RISK, RISK, RISK]):
        alerts += mon.observe(seg, float(t))
    # calm segments: watch; the first risky one: a warning (the gas rule is critical, a warning is downgraded);
    # then the alarm, which passes the rule's cooldown because it escalates; later repeats do not
    assert [(a.time, a.rule, a.severity) for a in alerts] == [(2.0, GAS, "warning"), (3.0, GAS, "critical")]
