"""The two ME-POMDPs of the experiment: multi-environment Tiger and the safety monitor's escalation.

Tiger (Kaelbling et al.): listen (-1) or open a door (+10, or -100 on the tiger); opening resets.
Environment "standard" hears the tiger's side with 0.85; "biased" hears "left" with 0.95 when the tiger
is left but also 0.45 when it is right (the research note's pair, where neither model is a special
case of the other).

Escalation: hidden state safe / risky, one step per closed log segment. Actions watch, warn, alarm.
Observation: the risk gate's probability for the newest segment, binned at `EDGES`; each environment
is one measured score histogram of the gate (`gate_sensors.py`: per condition, or per held-out fold),
smoothed by half a count per bin. Risk starts with the per-segment hazard measured on the dev logs and persists until
handled: a warning is heeded half the time, an alarm always. Costs per segment (fixed before solving,
in `EscalationCosts`): unattended risk -5, a warning -1 (nuisance or not), a false alarm -10.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from training.methods.pomdp.model import MEPOMDP, POMDP

DISCOUNT = 0.95
EDGES = (0.0, 0.2, 0.5, 0.7, 0.9, 1.0)
ESCALATION_ACTIONS = ("watch", "warn", "alarm")


def tiger(hear_left_if_left: float, hear_left_if_right: float, discount: float = DISCOUNT) -> POMDP:
    """Tiger with a given sensor; states (tiger-left, tiger-right), actions (listen, open-left, open-right)."""
    T = np.stack([np.eye(2), np.full((2, 2), 0.5), np.full((2, 2), 0.5)])
    listen = np.array([[hear_left_if_left, 1 - hear_left_if_left], [hear_left_if_right, 1 - hear_left_if_right]])
    obs = np.stack([listen, np.full((2, 2), 0.5), np.full((2, 2), 0.5)])
    R = np.array([[-1.0, -1.0], [-100.0, 10.0], [10.0, -100.0]])
    return POMDP(T, obs, R, discount, ("listen", "open-left", "open-right"), ("hear-left", "hear-right"))


def me_tiger() -> MEPOMDP:
    envs = (tiger(0.85, 0.15), tiger(0.95, 0.45))
    return MEPOMDP(envs, np.full((2, 2), 0.5), ("standard", "biased"))


@dataclass(frozen=True)
class EscalationCosts:
    miss: float = 5.0          # per segment of risk left unattended
    warning: float = 1.0       # per warning
    false_alarm: float = 10.0  # per alarm when nothing is risky
    heed: float = 0.5          # chance a warning ends the risk


def bin_counts(hist: list[int], grid: int, edges: tuple[float, ...] = EDGES) -> np.ndarray:
    """Merge a `grid`-bin histogram of [0, 1] into the bins between `edges` (multiples of 1/grid)."""
    cuts = [round(e * grid) for e in edges]
    if any(abs(c - e * grid) > 1e-9 for c, e in zip(cuts, edges, strict=True)):
        raise ValueError(f"edges {edges} must be multiples of 1/{grid}")
    h = np.asarray(hist, dtype=float)
    return np.array([h[a:b].sum() for a, b in zip(cuts[:-1], cuts[1:], strict=True)])


def sensor_model(hist: dict, grid: int, edges: tuple[float, ...] = EDGES, smoothing: float = 0.5) -> np.ndarray:
    """P(bin | safe), P(bin | risky) as rows [2, Z] from one condition's histograms."""
    rows = [bin_counts(hist[c], grid, edges) + smoothing for c in ("safe", "risky")]
    return np.stack([r / r.sum() for r in rows])


def hazard(measured: dict, condition: str = "as_written") -> float:
    """Per-segment chance that risk starts: risky segments over risk-free ones in the dev logs."""
    h = measured["conditions"][condition]
    return float(sum(h["risky"]) / sum(h["safe"]))


def escalation_pomdp(sensor: np.ndarray, onset: float, costs: EscalationCosts = EscalationCosts(),
                     discount: float = DISCOUNT) -> POMDP:
    """States (safe, risky); observation = binned gate probability of the new segment, from `sensor` [2, Z]."""

    def handled(p: float) -> np.ndarray:  # risk ends with chance p (and may start again at once)
        return np.array([[1 - onset, onset], [p * (1 - onset), 1 - p * (1 - onset)]])

    T = np.stack([handled(0.0), handled(costs.heed), handled(1.0)])
    obs = np.broadcast_to(sensor, (3, *sensor.shape)).copy()
    R = np.array([[0.0, -costs.miss], [-costs.warning, -costs.warning], [-costs.false_alarm, 0.0]])
    names = tuple(f"p {a:.1f}-{b:.1f}" for a, b in zip(EDGES[:-1], EDGES[1:], strict=True))
    return POMDP(T, obs, R, discount, ESCALATION_ACTIONS, names)


# Environment sets, each fixed before any policy was solved.
CONDITIONS = ("as_written", "in_sample", "perturbed", "degraded")   # how the gate's sensor model was measured
CAPTIONERS = ("perturbed", "degraded", "spurious", "spurious_acts")               # captioners a deployment may meet
SETTINGS = ("home", "away")                                        # where the camera is
PACES = ("short", "long")                                          # how quickly trouble comes in its scenes
ENVSETS = ("folds", "conditions", "captioners", "settings", "pace")
SPLITS = {"settings": SETTINGS, "pace": PACES}                     # sets split from the logs, each with its hazard


def environments(measured: dict, envset: str) -> dict[str, tuple[dict, float]]:
    """Named (histograms, hazard) per environment of `envset`:

    - conditions: the four measurement conditions; folds: the five held-out folds of the perturbed
      condition (the spread of a sensor model estimated from a fifth of the logs); both at the dev logs' hazard;
    - captioners: the captioners a camera may have, erring in opposite directions: the evaluation's
      perturbations, a degraded one that loses evidence (under-reports) and one that adds hazard objects
      from other scenes (over-reports), at the dev logs' hazard;
    - settings: a camera at home or away, each with the perturbed condition's histograms of the segments
      scored there and its own hazard (risky segments over risk-free ones there, as written);
    - pace: scenes where trouble comes quickly (short logs: fewer than 5 segments before the risky one) or
      slowly (long logs), each with the perturbed histograms of its logs and its own hazard, as for settings.
    """
    if envset not in ENVSETS:
        raise ValueError(f"unknown environment set {envset!r} (one of {', '.join(ENVSETS)})")
    conditions, onset = measured["conditions"], hazard(measured)
    if envset == "conditions":
        return {c: (conditions[c], onset) for c in CONDITIONS if c in conditions}
    if envset == "folds":
        return {f"fold {i}": (h, onset) for i, h in enumerate(measured.get("folds", {}).get("perturbed", []))}
    if envset == "captioners":
        return {c: (conditions[c], onset) for c in CAPTIONERS} if set(CAPTIONERS) <= set(conditions) else {}
    split = measured.get(envset, {})
    if not split:
        return {}
    written = split["as_written"]
    return {w: (split["perturbed"][w], sum(written[w]["risky"]) / sum(written[w]["safe"])) for w in SPLITS[envset]}


def me_escalation(measured: dict, envset: str = "folds", costs: EscalationCosts = EscalationCosts()) -> MEPOMDP:
    """One environment per sensor model (and hazard) of `envset` (see `environments`); every stream starts safe."""
    envs = environments(measured, envset)
    if not envs:
        raise ValueError(f"the measurement has no {envset!r} sensor models")
    pomdps = tuple(escalation_pomdp(sensor_model(h, measured["grid"]), onset, costs) for h, onset in envs.values())
    return MEPOMDP(pomdps, np.tile([1.0, 0.0], (len(pomdps), 1)), tuple(envs))
