"""The safety monitor's robust escalation policy: solve it from the measured gate and write the policy file.

`python -m training.methods.pomdp.escalation [--envset folds] [--out models/safety/data/escalation_policy.json]`
builds the escalation ME-POMDP from `data/gate_sensors.json`, solves it point-based on the product
space (AB-style refinement from the worst-case prior), and writes what `models.safety.escalation`
needs at run time: the product dynamics, the stage-0 alpha-vectors with their actions, and the
adversary's worst-case prior as the starting belief. Deterministic: the same inputs write the same file.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from models.safety.escalation import ESCALATION_FILE, LEVELS
from training.methods.pomdp.gate_sensors import load
from training.methods.pomdp.problems import EDGES, ENVSETS, ESCALATION_ACTIONS, EscalationCosts, me_escalation
from training.methods.pomdp.robust import RobustSolution, solve

HORIZON = 40
ENVSET = "folds"


def solve_escalation(measured: dict | None = None, envset: str = ENVSET, costs: EscalationCosts = EscalationCosts(),
                     horizon: int = HORIZON, seed: int = 0) -> tuple[RobustSolution, tuple[str, ...]]:
    """The robust solution and the names of its sensor models."""
    me = me_escalation(measured or load(), envset, costs)
    return solve(me, horizon, "point", seed=seed), me.names


def policy_document(sol: RobustSolution, names: tuple[str, ...], envset: str) -> dict:
    """Everything the monitor's `EscalationPolicy` loads, plus where it came from."""
    if ESCALATION_ACTIONS != LEVELS:
        raise ValueError("the POMDP's actions and the monitor's levels must agree")
    def r(a) -> list:
        return np.round(np.asarray(a, float), 10).tolist()

    return {"levels": list(LEVELS), "edges": list(EDGES), "sensor_models": list(names), "envset": envset,
            "robust_value": round(sol.value, 10), "worst_case_mixture": r(sol.prior),
            "transition": r(sol.pomdp.T), "observation": r(sol.pomdp.O[0]),
            "alphas": r(sol.plans.alphas[0]), "actions": sol.plans.actions[0].astype(int).tolist(),
            "prior": r(sol.worst_belief),
            "made_by": "python -m training.methods.pomdp.escalation (from training/methods/pomdp/data/gate_sensors.json)"}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m training.methods.pomdp.escalation", description=__doc__.splitlines()[0])
    p.add_argument("--envset", default=ENVSET, choices=ENVSETS)
    p.add_argument("--out", default=str(ESCALATION_FILE))
    a = p.parse_args(argv)
    sol, names = solve_escalation(envset=a.envset)
    Path(a.out).write_text(json.dumps(policy_document(sol, names, a.envset), indent=1) + "\n")
    print(f"robust value {sol.value:.3f} over {', '.join(names)}; worst-case mixture {np.round(sol.prior, 3)} -> {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
