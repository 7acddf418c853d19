"""MPCache: cluster bounds and the two-level selection are exact, the direction holds on a few synthetic
prompts, the cost model orders full / MPCache / token top-k, and the grounder's archive memory uses it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.test_trisense_index import QUERY, make_clip, make_grounder
from training.methods.mpcache import MPCacheSelector
from training.methods.mpcache.cost import decode_step_cost
from training.methods.mpcache.experiment import CONFIG, WEIGHT_GRID, level_counts
from training.methods.mpcache.selector import MPCacheConfig, cluster_bounds, hierarchical_select, static_keep
from training.methods.mpcache.synthetic import (
    attention_probs,
    make_prompt,
    mass_and_error,
    oracle,
    random_tokens,
    sink_and_recent,
)


def test_cluster_bounds_match_brute_force_with_a_partial_cluster_and_missing_keys():
    rng = np.random.default_rng(0)
    keys = rng.standard_normal((2, 37, 5))
    present = rng.random((2, 37)) > 0.3
    present[1, 32:] = False  # the last (partial) cluster of head 1 is empty
    hi, lo, alive = cluster_bounds(keys, 8, present)
    assert hi.shape == (2, 5, 5)
    for h in range(2):
        for g in range(5):
            rows = keys[h, g * 8:(g + 1) * 8][present[h, g * 8:(g + 1) * 8]]
            assert alive[h, g] == (len(rows) > 0)
            if len(rows):
                np.testing.assert_allclose(hi[h, g], rows.max(0))
                np.testing.assert_allclose(lo[h, g], rows.min(0))


def test_selection_is_whole_child_clusters_with_sink_and_newest():
    rng = np.random.default_rng(1)
    cfg = MPCacheConfig(s1=8, s2=4, ratio1=0.5, ratio2=0.25)
    keys, query = rng.standard_normal((3, 70, 6)), rng.standard_normal((3, 6))
    chosen = hierarchical_select(query, keys, cfg)
    g2 = -(-70 // 4)
    for h in range(3):
        per_cluster = np.pad(chosen[h], (0, g2 * 4 - 70)).reshape(g2, 4)
        assert np.all(per_cluster.all(1) | ~per_cluster.any(1))[()] or per_cluster[-1, :70 % 4].all()
        picked = np.flatnonzero(chosen[h, ::4])
        assert 0 in picked and g2 - 1 in picked
        assert len(picked) <= int(g2 * cfg.ratio2) + 2
    joint = hierarchical_select(query, keys, cfg, joint=True)
    assert joint.shape == (1, 70)


def test_static_stage_keeps_what_the_prompt_end_attends_to():
    keys = np.zeros((1, 10, 2))
    keys[0, 3] = [5.0, 0.0]
    keys[0, 7] = [0.0, 5.0]
    observers = np.array([[[1.0, 0.0], [0.0, 1.0]]])
    assert static_keep(keys, observers, 0.2).tolist() == [3, 7]


def test_direction_on_a_few_prompts_and_cost_model():
    rng = np.random.default_rng(0)
    mass = {"mpc": [], "oracle": [], "random": [], "recent": []}
    for _ in range(3):
        p = make_prompt(rng, steps=2)
        kept = static_keep(p.keys, p.observers, CONFIG.keep_static)
        for q in p.decode:
            chosen = np.zeros(p.keys.shape[:2], bool)
            chosen[:, kept] = hierarchical_select(q, p.keys[:, kept], CONFIG)
            counts = chosen.sum(1)
            t = p.keys.shape[1]
            assert 0.10 <= counts.mean() / t <= 0.13
            for name, sel in (("mpc", chosen), ("oracle", oracle(attention_probs(q, p.keys), counts)),
                              ("random", random_tokens(rng, t, counts)), ("recent", sink_and_recent(t, counts))):
                mass[name].append(mass_and_error(q, p.keys, p.values, sel)[0])
    m = {k: float(np.mean(v)) for k, v in mass.items()}
    assert m["mpc"] >= 0.8 * m["oracle"]
    assert m["mpc"] >= 4 * max(m["random"], m["recent"])
    k1, k2 = level_counts(1126, CONFIG)
    for w in WEIGHT_GRID:  # cheaper than full attention and than Quest under every price weighting
        cost = decode_step_cost(2048, 1126, 32, 32, 16, k1, k2, w)
        assert cost.full > cost.mpcache and cost.quest > cost.mpcache and cost.token_topk > cost.full, w


@pytest.fixture(scope="module")
def grounder():
    return make_grounder()


def test_archive_memory_finds_the_planted_moment(tmp_path, grounder):
    from pipelines.sinks.grounding_index import GroundingIndex

    rng = np.random.default_rng(1)
    selector = MPCacheSelector.for_grounder(grounder, budget=0.12)
    index = GroundingIndex(tmp_path / "g.db", grounder, context_s=8, selector=selector)
    for k in range(6):
        index.add(f"clip{k}", make_clip(rng, 300, planted=(200, 208) if k == 4 else None))
    hits = index.search(QUERY, top_k=3)
    assert hits  # the fine model here is untrained: what matters is which seconds it was given
    with torch.no_grad():
        qc = grounder.model.coarse.embed_query(torch.from_numpy(grounder.embed_query(QUERY))[None])[0].numpy()
    for k in range(6):
        ranges = index.memory.ranges(f"clip{k}", index.load, qc, 0, 64)
        assert sum(e - s for s, e in ranges) <= 0.12 * 300 + 2 * 8  # budget plus sink and newest clusters
        covered = np.zeros(300, bool)
        for s, e in ranges:
            covered[s:e] = True
        assert covered[:8].all() and covered[296:].all()  # sink cluster and the newest (partial) one
        if k == 4:
            assert covered[200:208].all()


def test_probes_drive_look_once_eviction_and_grounder_reads_only_selected_seconds(grounder):
    rng = np.random.default_rng(2)
    clip = make_clip(rng, 400, planted=(300, 308))
    from models.trisense.memory import second_keys

    keys, present = second_keys(grounder.model, clip)
    kept = MPCacheSelector.for_grounder(grounder, probes=[QUERY]).compress(keys, present)
    assert kept.mean() == pytest.approx(0.55, abs=0.01) and kept[300:308].all()
    grounder.selector = MPCacheSelector.for_grounder(grounder, probes=[QUERY])
    try:
        ranges = grounder.selected_ranges(grounder.embed_query(QUERY), clip)
        assert sum(e - s for s, e in ranges) < 400
        assert any(s <= 300 and 308 <= e for s, e in ranges)
        moments = grounder.ground(QUERY, clip, top_k=2)
        assert moments and all(any(s <= m.start < m.end <= e for s, e in ranges) for m in moments)
    finally:
        grounder.selector = None
