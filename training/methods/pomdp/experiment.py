"""ME-/AB-POMDPs in miniature: a robust policy's worst case beats every single-environment policy's.

Two problems: multi-environment Tiger (standard vs biased sensor) and the safety monitor's escalation
(watch / warn / alarm) with the risk gate's measured score histograms as sensor models. Escalation
environment sets: the pace of the scenes (trouble comes quickly or slowly, each with its measured
hazard: their errors point in opposite directions, the set the claim is checked on), and four ordered
sets (the captioners, the camera's setting, the five held-out folds, the four measurement conditions:
one sensor model is the hardest for every policy, so the robust policy is that model's own and ties it).
Per problem: robust plans on the product space (point-based, refined from the worst-case prior; Tiger
also exact at a short horizon), plans for each environment alone, every plan scored exactly in every
environment, and the deployed form (greedy belief tracking) simulated.
"""

from __future__ import annotations

import numpy as np

from training.methods.pomdp.gate_sensors import load
from training.methods.pomdp.model import MEPOMDP, product
from training.methods.pomdp.plans import GreedyBelief, evaluate
from training.methods.pomdp.problems import me_escalation, me_tiger
from training.methods.pomdp.robust import RobustSolution, single_environment, solve
from training.methods.runner import Experiment, Result

HORIZON = 40          # plan length (0.95^40 = 0.13 of the first step's weight remains)
EXACT_HORIZON = 5     # exact value iteration on the product space
EPISODES, STEPS = 3000, 60


def _row(problem: str, policy: str, names: tuple[str, ...], values, kind: str = "plan (exact)") -> dict:
    row = {"problem": problem, "policy": policy, "scored by": kind}
    row.update({n: float(v) for n, v in zip(names, values, strict=True)})
    row["worst"] = float(np.min(values))
    return row


def study(problem: str, me: MEPOMDP, seed: int, progress) -> tuple[list[dict], dict, RobustSolution]:
    """Rows for one ME-POMDP and its headline numbers."""
    names, n = me.names, me.n
    sol = solve(me, HORIZON, "point", seed=seed)
    robust = sol.mixture @ sol.values
    rows = [_row(problem, "robust (mixed plan, LP)", names, robust),
            _row(problem, "robust (best single plan)", names, sol.values[sol.best_pure])]
    single_worst, optimum = [], []
    pomdp, vertices = product(me)
    deployed = {"robust": [(GreedyBelief(pomdp, sol.plans.alphas[0], sol.plans.actions[0], sol.worst_belief),
                            pomdp, vertices[j]) for j in range(n)]}
    for i in progress(range(n), desc=f"{problem}: single environments", total=n):
        plans = single_environment(me, i, HORIZON, seed=seed)
        root = plans.best_root(me.initial[i])
        values = [float(evaluate(plans, me.envs[j])[0][root] @ me.initial[j]) for j in range(n)]
        single_worst.append(min(values))
        optimum.append(values[i])
        rows.append(_row(problem, f"single: {names[i]}", names, values))
        greedy = GreedyBelief(me.envs[i], plans.alphas[0], plans.actions[0], me.initial[i])
        deployed[names[i]] = [(greedy, me.envs[j], me.initial[j]) for j in range(n)]
    sim = {}
    for name, runs in deployed.items():
        # the same random streams per environment for every policy
        sim[name] = [pol.simulate(world, b0, STEPS, EPISODES, np.random.default_rng(seed + j))[0]
                     for j, (pol, world, b0) in enumerate(runs)]
        rows.append(_row(problem, f"deployed greedy: {name}", names, sim[name], "greedy belief (simulated)"))
    hardest = int(np.argmax(sol.prior))
    figures = {"robust_worst": float(robust.min()), "best_single_worst": float(max(single_worst)),
               "lp_value": sol.value, "min_env_optimum": float(min(optimum)),
               "adversary_max_weight": float(sol.prior[hardest]),
               "hardest_own_policy_worst": float(single_worst[hardest]),
               "others_best_single_worst": float(max(w for i, w in enumerate(single_worst) if i != hardest)),
               "greedy_robust_worst": float(min(sim["robust"])),
               "greedy_best_single_worst": float(max(min(v) for k, v in sim.items() if k != "robust"))}
    return rows, figures, sol


# Escalation environment sets (`problems.environments`), each fixed before it was solved. The deployment set
# (measured, not ordered: the environments' errors point in opposite directions): the claim is checked on it.
# Ordered sets (measured): one sensor model is the hardest for every policy; checked to stay so.
DEPLOYMENT_SETS = ("pace",)
ORDERED_SETS = ("captioners", "settings", "folds", "conditions")


def _ties_hardest(f: dict) -> bool:
    """An ordered set: all weight on one model, whose own policy is the robust one and beats the others'."""
    return (f["adversary_max_weight"] > 1 - 1e-6 and abs(f["robust_worst"] - f["hardest_own_policy_worst"]) < 1e-6
            and f["robust_worst"] > f["others_best_single_worst"] + 1e-6)


def run(seed: int, progress) -> Result:
    tiger = me_tiger()
    rows, fig_t, sol_t = study("tiger", tiger, seed, progress)
    exact = solve(tiger, EXACT_HORIZON, "exact")
    point = solve(tiger, EXACT_HORIZON, "point", seed=seed)
    figures = {**{f"tiger_{k}": v for k, v in fig_t.items()},
               "tiger_exact_value_h5": exact.value, "tiger_point_value_h5": point.value}
    checks = {
        "tiger: robust worst case > every single-environment policy's worst case":
            fig_t["robust_worst"] > fig_t["best_single_worst"],
        "tiger: robust value <= every environment's own optimum": fig_t["lp_value"] <= fig_t["min_env_optimum"] + 1e-6,
        "tiger: point-based equals exact value iteration at horizon 5": abs(exact.value - point.value) < 1e-6,
    }
    notes = [f"tiger worst-case prior over (standard, biased): {np.round(sol_t.prior, 3).tolist()}; "
             f"point-based robust value by refinement round: {np.round(sol_t.history, 3).tolist()}"]
    measured = load()
    for envset in DEPLOYMENT_SETS + ORDERED_SETS:
        me = me_escalation(measured, envset)
        set_rows, f, sol = study(f"escalation ({envset})", me, seed, progress)
        rows += set_rows
        figures.update({f"{envset}_{k}": v for k, v in f.items()})
        notes.append(f"escalation ({envset}) worst-case prior over {list(me.names)}: {np.round(sol.prior, 3).tolist()}")
        if envset in DEPLOYMENT_SETS:
            checks[f"escalation ({envset}): robust worst case > every single-environment policy's worst case"] = \
                f["robust_worst"] > f["best_single_worst"] + 1e-6
            checks[f"escalation ({envset}): robust value <= every environment's own optimum"] = \
                f["lp_value"] <= f["min_env_optimum"] + 1e-6
            checks[f"escalation ({envset}): the adversary mixes the environments (not ordered)"] = \
                f["adversary_max_weight"] < 1 - 1e-6
        else:
            checks[f"escalation ({envset}, ordered): robust ties the hardest model's own policy, beats the others'"] = \
                _ties_hardest(f)
    notes.append(f"plans: horizon {HORIZON}, discount 0.95; deployed greedy policies: {EPISODES} episodes x {STEPS} steps")
    return Result(rows, figures, checks, notes)


EXPERIMENT = Experiment(
    name="pomdp",
    title="ME-/AB-POMDPs: robust policies under uncertain sensor models",
    paper="Bovy, Probine, Suilen, Topcu, Jansen, Multi-Environment POMDPs: Discrete Model Uncertainty under "
          "Partial Observability, NeurIPS 2025",
    claim="Reducing a multi-environment POMDP to adversarial initial beliefs and solving it gives a policy whose "
          "worst case over the environments beats the worst case of every policy solved for one environment.",
    run=run,
)
