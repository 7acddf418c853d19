"""MPCache in miniature: attention mass kept at a ~12 % token budget, and the MPC cost of a step.

Per seed (0, 1, 2), 20 synthetic prompts of 2048 tokens (4 heads, d = 32, 64-token topic segments), 5
decoding queries each. MPCache keeps 55 % of the tokens in the look-once stage (which with the authors'
ratio1 = 0.5, ratio2 = 0.2 puts the per-step budget near 12 % of the cache), then selects clusters per
head and step. Every other selection takes exactly as many tokens per head and step: exact top-k of the
true attention (the oracle), the published selectors H2O, SnapKV and Quest (`baselines.py`), random tokens,
an attention sink plus the newest tokens, and the two stages of MPCache alone. The cost model (`cost.py`)
prices one decoding step for caches of 1k to 8k tokens, and at 2k under a grid of 27 price weightings.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from training.methods.mpcache.baselines import h2o, quest, snapkv
from training.methods.mpcache.cost import Weights, decode_step_cost
from training.methods.mpcache.selector import MPCacheConfig, hierarchical_select, static_keep
from training.methods.mpcache.synthetic import (
    attention_probs,
    make_prompt,
    mass_and_error,
    oracle,
    random_tokens,
    sink_and_recent,
)
from training.methods.runner import Experiment, Result

PROMPTS, TOKENS, HEADS, DIM = 20, 2048, 4, 32
SEEDS = (0, 1, 2)
CONFIG = MPCacheConfig(keep_static=0.55)
METHODS = ("MPCache (static + dynamic)", "dynamic stage only", "static stage only", "exact top-k (oracle)",
           "random tokens", "sink + recent window", "H2O (heavy hitters + recent)", "SnapKV (prompt-end votes)",
           "Quest (page upper bounds)")
WEIGHT_GRID = [Weights(c, e, o) for c, e, o in itertools.product((0.5, 1.0, 2.0), (1.0, 2.0, 4.0), (0.02, 0.05, 0.1))]


def level_counts(kept: int, cfg: MPCacheConfig) -> tuple[int, int]:
    """Clusters chosen at each level (top fraction plus the first and last) over `kept` tokens."""
    g1, g2 = -(-kept // cfg.s1), -(-kept // cfg.s2)
    return int(g1 * cfg.ratio1) + 2, int(g2 * cfg.ratio2) + 2


def _selections(rng: np.random.Generator, prompt: Any, step: int, kept: np.ndarray,
                snap: np.ndarray | None) -> tuple[dict[str, np.ndarray], np.ndarray]:
    query = prompt.decode[step]
    t = prompt.keys.shape[1]
    mpc = np.zeros((HEADS, t), bool)
    mpc[:, kept] = hierarchical_select(query, prompt.keys[:, kept], CONFIG)
    counts = mpc.sum(1)
    # The dynamic stage alone over the full cache, its ratio2 scaled to the same budget.
    dynamic = hierarchical_select(query, prompt.keys, MPCacheConfig(ratio2=CONFIG.ratio2 * CONFIG.keep_static))
    static = np.zeros((HEADS, t), bool)
    static[:, static_keep(prompt.keys, prompt.observers, counts.mean() / t)] = True
    seen = np.concatenate([prompt.observers, prompt.decode[:step].transpose(1, 0, 2)], axis=1)
    snap = snapkv(prompt.keys, prompt.observers, counts) if snap is None else snap
    return {METHODS[0]: mpc, METHODS[1]: dynamic, METHODS[2]: static,
            METHODS[3]: oracle(attention_probs(query, prompt.keys), counts),
            METHODS[4]: random_tokens(rng, t, counts), METHODS[5]: sink_and_recent(t, counts),
            METHODS[6]: h2o(prompt.keys, seen, counts), METHODS[7]: snap,
            METHODS[8]: quest(query, prompt.keys, counts)}, snap


def _costs(tokens: int, w: Weights, s1: int = CONFIG.s1) -> Any:
    kept = int(round(CONFIG.keep_static * tokens))
    cfg = MPCacheConfig(s1=s1, s2=s1 // 2, keep_static=CONFIG.keep_static)
    k1, k2 = level_counts(kept, cfg)
    return decode_step_cost(tokens, kept, DIM, cfg.s1, cfg.s2, k1, k2, w)


def _cost_rows() -> list[dict[str, Any]]:
    """Per length: MPCache with the fixed 32/16-token clusters, and with clusters grown in proportion
    to the cache (s1 = 32 T / 2048) so that the number of clusters, and with it the top-k and one-hot
    work that is quadratic in it at a fixed budget fraction, stays that of T = 2048."""
    rows = []
    for tokens in (1024, 2048, 4096, 8192):
        fixed, scaled = _costs(tokens, Weights()), _costs(tokens, Weights(), max(2, CONFIG.s1 * tokens // TOKENS))
        rows.append({"part": "MPC cost per step and head", "method": f"T = {tokens}", "cost_full": fixed.full,
                     "cost_mpcache": fixed.mpcache, "cost_mpcache_scaled_clusters": scaled.mpcache,
                     "cost_token_topk": fixed.token_topk, "cost_quest": fixed.quest,
                     "full_over_mpcache": fixed.full / fixed.mpcache, "full_over_mpcache_scaled": fixed.full / scaled.mpcache,
                     "quest_over_mpcache": fixed.quest / fixed.mpcache, "token_topk_over_full": fixed.token_topk / fixed.full})
    return rows


def _grid_row() -> dict[str, Any]:
    """At 2k tokens, how the ratios move over `WEIGHT_GRID` (compare 0.5-2, exp 1-4, open 0.02-0.1)."""
    costs = [_costs(TOKENS, w) for w in WEIGHT_GRID]
    full_over = [c.full / c.mpcache for c in costs]
    quest_over = [c.quest / c.mpcache for c in costs]
    topk_over = [c.token_topk / c.full for c in costs]
    return {"part": "MPC cost at 2k over 27 weightings", "method": "min / median / max",
            "full_over_mpcache": [min(full_over), statistics.median(full_over), max(full_over)],
            "quest_over_mpcache": [min(quest_over), statistics.median(quest_over), max(quest_over)],
            "token_topk_over_full": [min(topk_over), statistics.median(topk_over), max(topk_over)]}


def run(seed: int = 0, progress: Callable[..., Iterator] | None = None) -> Result:
    """Seeds 0, 1, 2 (fixed; `seed` is the runner's and is not used)."""
    progress = progress or (lambda it, **_: iter(it))
    per_seed: dict[str, list[dict[str, float]]] = {m: [] for m in METHODS}
    for s in SEEDS:
        rng = np.random.default_rng(s)
        stats: dict[str, list[tuple[float, float, float]]] = {m: [] for m in METHODS}
        for _ in progress(range(PROMPTS), desc=f"prompts, seed {s}"):
            prompt = make_prompt(rng, tokens=TOKENS, heads=HEADS, d=DIM)
            kept = static_keep(prompt.keys, prompt.observers, CONFIG.keep_static)  # once per prompt
            snap = None  # SnapKV selects once per prompt, at MPCache's first-step budget
            for step in range(len(prompt.decode)):
                chosen_by, snap = _selections(rng, prompt, step, kept, snap)
                for method, chosen in chosen_by.items():
                    mass, err = mass_and_error(prompt.decode[step], prompt.keys, prompt.values, chosen)
                    stats[method].append((chosen.mean(), mass, err))
        for m, v in stats.items():
            per_seed[m].append({"seed": s, "tokens_frac": float(np.mean([x[0] for x in v])),
                                "attention_mass": float(np.mean([x[1] for x in v])),
                                "output_rel_err": float(np.mean([x[2] for x in v]))})
    rows = []
    for m, v in per_seed.items():
        row: dict[str, Any] = {"part": "selection at a fixed budget", "method": m}
        for key in ("tokens_frac", "attention_mass", "output_rel_err"):
            vals = [x[key] for x in v]
            row[key], row[key + "_sd"] = statistics.fmean(vals), statistics.stdev(vals)
        rows.append(row)
    mass = {r["method"]: r["attention_mass"] for r in rows}
    sd = {r["method"]: r["attention_mass_sd"] for r in rows}
    costs, grid = _cost_rows(), _grid_row()
    at_2k = costs[1]
    figures = {"budget": rows[0]["tokens_frac"], "mass_mpcache": mass[METHODS[0]], "mass_mpcache_sd": sd[METHODS[0]],
               "mass_oracle": mass[METHODS[3]], "mass_random": mass[METHODS[4]], "mass_recent": mass[METHODS[5]],
               "mass_h2o": mass[METHODS[6]], "mass_snapkv": mass[METHODS[7]], "mass_quest": mass[METHODS[8]],
               "mass_vs_oracle": mass[METHODS[0]] / mass[METHODS[3]],
               "cost_full_over_mpcache_2k": at_2k["full_over_mpcache"],
               "cost_full_over_mpcache_2k_min_over_weights": grid["full_over_mpcache"][0],
               "cost_quest_over_mpcache_2k_min_over_weights": grid["quest_over_mpcache"][0],
               "cost_token_topk_over_full_2k": at_2k["token_topk_over_full"]}
    per = {m: [x["attention_mass"] for x in v] for m, v in per_seed.items()}
    checks = {"budget_about_12pct": 0.10 <= figures["budget"] <= 0.13,
              "mass_close_to_exact_topk_every_seed_(>=0.8x)":
                  all(a >= 0.8 * o for a, o in zip(per[METHODS[0]], per[METHODS[3]], strict=True)),
              "mass_far_above_recent_and_random_every_seed_(>=4x)":
                  all(a >= 4 * max(r, w) for a, r, w in zip(per[METHODS[0]], per[METHODS[4]], per[METHODS[5]], strict=True)),
              "mpc_cost_below_full_attention_at_2k_under_every_weighting":
                  grid["full_over_mpcache"][0] > 1.0,
              "token_level_topk_dearer_than_full_attention_every_length_and_weighting":
                  all(r["token_topk_over_full"] > 1 for r in costs) and grid["token_topk_over_full"][0] > 1}
    best_other = max(METHODS[6:], key=lambda m: mass[m])
    notes = [f"seeds {list(SEEDS)}, {PROMPTS} prompts each; look-once stage keeps {CONFIG.keep_static:.0%} of the cache "
             f"using the last {CONFIG.observer_frac:.0%} of the prompt's queries; dynamic clusters s1 = 32 / s2 = 16 "
             "tokens, ratio1 = 0.5, ratio2 = 0.2, alpha = 0.6",
             f"best published selector by attention mass: {best_other} {mass[best_other]:.3f} +- {sd[best_other]:.3f} "
             f"against MPCache's {mass[METHODS[0]]:.3f} +- {sd[METHODS[0]]:.3f} (reported, not claimed: MPCache's claim "
             "is the cost under MPC at a mass near the oracle's)",
             "decoding queries are 85 % about topics the prompt end asked about and 15 % about an arbitrary "
             "topic, so the look-once stage can evict some mass a query later needs (compare 'dynamic stage only')",
             "cost units: our planning weights (comparison 1, exponential 2, 0.05 per opened element), and a grid of "
             "27 weightings around them (row 'MPC cost at 2k over 27 weightings'); not the paper's SPU measurements"]
    return Result(rows=rows + costs + [grid], figures=figures, checks=checks, notes=notes, seeds=len(SEEDS))


EXPERIMENT = Experiment(
    name="mpcache",
    title="MPCache: look-once static eviction plus hierarchical cluster selection",
    paper="Zeng, Dong, Zhou, Ma, Tan, Wang, Li: MPCache: MPC-Friendly KV Cache Eviction for Efficient Private "
          "LLM Inference (NeurIPS 2025, arXiv 2501.06807)",
    claim="At a ~12 % token budget, MPCache's selection keeps attention mass close to exact top-k and far above "
          "a recent window or random tokens (three seeds), and under secret sharing a decoding step costs less "
          "than full attention under every weighting of a 27-point price grid, while plaintext-style token-level "
          "top-k costs more than full attention.",
    run=run,
)
