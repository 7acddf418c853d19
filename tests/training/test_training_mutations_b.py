"""Mutation checks (issue 31), second half: CMDP, POMDP, ZeroTIR, CCE, Alchemist and AR-RAG. Same contract as
`test_training_mutations.py`: the effect holds as shipped and is asserted gone once the core is ablated."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.metrics import roc_auc_score
from torch.nn import functional as F

from tests.training.test_training_mutations import Ablation, Check, check_mutation

torch.set_num_threads(1)
CASES: dict[str, tuple[Check, Ablation]] = {}


def case(name: str, ablate: Ablation):
    def register(check: Check) -> Check:
        CASES[name] = (check, ablate)
        return check
    return register


# -- CMDP: the dual variable keeps the strict learner within its budget -----------------------------------

def _frozen_dual(mp: pytest.MonkeyPatch) -> None:
    from models.cmdp.primal_dual import PrimalDual

    mp.setattr(PrimalDual, "lam", property(lambda self: 0.0, lambda self, value: None), raising=False)


@case("cmdp", _frozen_dual)
def strict_primal_dual_stays_in_budget() -> tuple[bool, dict]:
    from models.cmdp.tabular import lp_optimum, random_cmdp
    from training.methods.cmdp.experiment import learn

    small = random_cmdp(np.random.default_rng(3), S=4, A=2, horizon=4)
    vstar = lp_optimum(small)
    vr, vc = learn(small, "strict", 800, seed=1)
    early, late = (vstar - vr[50:100].mean()) / vstar, (vstar - vr[400:].mean()) / vstar
    cost = float(vc[400:].mean())
    return cost <= small.budget and late < 0.6 * early, {"cost": cost, "budget": small.budget,
                                                         "gap_early": float(early), "gap_late": float(late)}


# -- ME-POMDP: the robust mixture beats each single-environment plan in the worst case --------------------

def _nominal_plan(mp: pytest.MonkeyPatch) -> None:
    from training.methods.pomdp import robust

    def nominal(m: np.ndarray) -> tuple[float, np.ndarray]:
        best = int(np.argmax(m[:, 0]))  # the best plan if environment 0 were the truth
        return float(m[best].min()), np.eye(len(m))[best]

    mp.setattr(robust, "robust_mixture", nominal)


@case("pomdp", _nominal_plan)
def robust_plan_wins_the_worst_case() -> tuple[bool, dict]:
    from training.methods.pomdp.plans import evaluate
    from training.methods.pomdp.problems import me_tiger
    from training.methods.pomdp.robust import single_environment, solve

    me = me_tiger()
    sol = solve(me, 15, "point", n_beliefs=120, rounds=3)
    robust_worst = float((sol.mixture @ sol.values).min())
    singles = []
    for i in range(me.n):
        plans = single_environment(me, i, 15, n_beliefs=120)
        root = plans.best_root(me.initial[i])
        singles.append(min(float(evaluate(plans, e)[0][root] @ b) for e, b in zip(me.envs, me.initial, strict=True)))
    return all(robust_worst > w + 5.0 for w in singles), {"robust_worst": robust_worst, "single_worst": singles}


# -- ZeroTIR: outcome-reward RL teaches the policy to call the tool, and the tool lifts accuracy ----------

def _tool_disabled(mp: pytest.MonkeyPatch) -> None:
    from training.methods.zerotir.executor import ExecResult, Executor

    mp.setattr(Executor, "run_many", lambda self, programs: [ExecResult(False, "", "tool disabled", 0.0)
                                                              for _ in programs])


@case("zerotir", _tool_disabled)
def tool_use_lifts_accuracy() -> tuple[bool, dict]:
    from training.methods.zerotir.executor import Executor, Limits
    from training.methods.zerotir.grpo import CachedRunner, Config, evaluate, restore, train
    from training.methods.zerotir.tasks import make_episodes

    config = Config(steps=12, batch=8, checkpoints=(12,))
    with Executor(limits=Limits(timeout_s=1.0, memory_mb=128)) as executor:
        runner = CachedRunner(executor)
        policy, checkpoints = train(make_episodes(64, 11), runner, config, seed=0)
        test = make_episodes(48, 12)
        before = evaluate(restore(checkpoints[0]["state_dict"], config), test, runner, config, samples=2)
        after = evaluate(policy, test, runner, config, samples=2)
    gain = after["accuracy"] - before["accuracy"]
    return gain > 0.25, {"accuracy_before": before["accuracy"], "accuracy_after": after["accuracy"],
                         "code_use_after": after["code_use"]}


# -- CCE: the population term moves recommendations onto the positive population --------------------------

def _no_population_term(mp: pytest.MonkeyPatch) -> None:
    from training.methods.cce import recourse
    from training.methods.cce.transport import squared_cost

    def nearest_plan(neg: np.ndarray, pos: np.ndarray, rho: float, eps: float = 0.002) -> np.ndarray:
        plan = np.zeros((len(neg), len(pos)))  # rho -> 0: everyone takes the cheapest positive
        plan[np.arange(len(neg)), squared_cost(neg, pos).argmin(1)] = 1.0 / len(neg)
        return plan

    mp.setattr(recourse, "collective_plan", nearest_plan)


@case("cce", _no_population_term)
def collective_recourse_reaches_the_population() -> tuple[bool, dict]:
    from tests.training.test_cce import _populations
    from training.methods.cce.gate import explain_gate
    from training.methods.cce.metrics import bandwidth, mmd
    from training.methods.cce.recourse import individual_counterfactuals

    gate, model, neg, pos = _populations(seed=2, n=400)
    rec = explain_gate(gate, neg, pos, rho=1.0)
    u_pos = model.standardise(pos)
    width = bandwidth(u_pos)
    collective = mmd(model.standardise(rec.targets), u_pos, width)
    individual = mmd(individual_counterfactuals(model.standardise(neg), model, 0.5), u_pos, width)
    return collective <= 0.25 * individual, {"mmd_collective": collective, "mmd_individual": individual}


# -- Alchemist: the conditional-gain score ranks mis-captioned samples last -------------------------------

def _random_score(mp: pytest.MonkeyPatch) -> None:
    from training.methods.alchemist import curate

    mp.setattr(curate, "score", lambda model, x, caption, variant, seed=0, **_:
               np.random.default_rng(seed).standard_normal(len(x)))


@case("alchemist", _random_score)
def estimator_ranks_miscaptioned_last() -> tuple[bool, dict]:
    from training.methods.alchemist.curate import curate

    rng = np.random.default_rng(0)
    protos = rng.normal(0, 1, (4, 24))
    y = rng.integers(0, 4, 400)
    vectors = protos[y] + rng.normal(0, 0.3, (400, 24))
    bad = np.arange(400) < 80
    shown = np.where(bad, (y + 1) % 4, y)
    ranking = curate(vectors, np.eye(4, dtype=np.float32)[shown], steps=80)
    auc = float(roc_auc_score(~bad, ranking.scores))
    assert sorted(ranking.order) == list(range(400))  # a ranking of every sample, ablated or not
    return auc > 0.8, {"auc_clean_over_miscaptioned": auc}


# -- AR-RAG: FAiD's blender turns retrieved codes into a lower NLL ----------------------------------------

def _no_retrieval(mp: pytest.MonkeyPatch) -> None:
    from training.methods.arrag.faid import PatchBlender

    forward = PatchBlender.forward
    mp.setattr(PatchBlender, "forward", lambda self, h, table, codes, filled:
               forward(self, h, table, codes, torch.zeros_like(filled)))


@case("arrag", _no_retrieval)
def faid_uses_retrieved_codes() -> tuple[bool, dict]:
    from training.methods.arrag.faid import FAiD
    from training.methods.arrag.model import TokenGPT, fit, nll_per_token

    torch.manual_seed(0)
    vocab, grid = 16, 6
    base = TokenGPT(vocab, grid=grid, width=24, depth=2, dropout=0.0)
    gen = torch.Generator().manual_seed(0)
    x = torch.randint(0, vocab, (64, grid * grid), generator=gen)
    hit = torch.rand(64, grid * grid, generator=gen) < 0.7  # retrieval holds the answer 70 % of the time
    ret = torch.where(hit, x, torch.randint(0, vocab, x.shape, generator=gen)).unsqueeze(-1).repeat(1, 1, 2)
    faid = FAiD(TokenGPT(vocab, grid=grid, width=24, depth=2, dropout=0.0))
    faid.base.load_state_dict(base.state_dict())
    h, filled = faid.prefix(x), torch.ones(ret.shape, dtype=torch.bool)

    def loss(idx):
        return F.cross_entropy(faid(h[idx], ret[idx], filled[idx]).reshape(-1, vocab), x[idx].reshape(-1))

    fit(faid, faid.trainable(), lambda g: (torch.randint(0, 64, (16,), generator=g),), loss, 40, 1e-2)
    with torch.no_grad():
        nll = nll_per_token(torch.softmax(faid(h, ret, filled), -1), x)
    chance = float(np.log(vocab))
    return nll < 0.75 * chance, {"nll": nll, "uniform_nll": chance}


@pytest.mark.parametrize("method", sorted(CASES))
def test_the_effect_needs_the_core(method: str, monkeypatch: pytest.MonkeyPatch) -> None:
    check_mutation(method, *CASES[method], monkeypatch)
