"""The tag-path ceiling (`training/experiments/tag_ceiling_v4.py`): per class it finds the rule that scores best on the
clips it is given, restricted to the hand map's evidence unless any YAMNet output is allowed, and its false events
are counted on eventless clips only."""

from __future__ import annotations

import numpy as np

from models.prefm.labels import LLP_CLASSES
from models.taxonomy import audioset_index
from training.experiments.tag_ceiling_v4 import auc, ceiling, one_class_track, per_class_rules
from training.perception.llp_head import Clip, tracked

DOG = LLP_CLASSES.index("Dog")
CELLO = LLP_CLASSES.index("Cello")


def _clip(i: int, probs: np.ndarray, labels: np.ndarray) -> Clip:
    return Clip(f"c{i}", "train", probs, np.zeros((len(probs), 1024), np.float32), labels, {})


def _clips() -> list[Clip]:
    """Dog barks at 2-5 s in clips 0-3 ("Bark" 0.3 there, 0.05 elsewhere); clip 4 is eventless. A cello plays
    at 6-9 s in clips 0-1, heard only as "Glass" (0.8): no name of the map's hears it."""
    idx = audioset_index()
    clips = []
    for i in range(5):
        p = np.full((12, 521), 0.01, np.float32)
        y = np.zeros((12, 25), np.int64)
        p[:, idx["Bark"]] = 0.05
        if i < 4:
            p[2:6, idx["Bark"]] = 0.3
            y[2:6, DOG] = 1
        if i < 2:
            p[6:10, idx["Glass"]] = 0.8
            y[6:10, CELLO] = 1
        clips.append(_clip(i, p, y))
    return clips


def test_the_oracle_finds_the_rule_each_class_needs_and_only_any_output_hears_the_unmapped_cello():
    mapped = ceiling(_clips(), any_output=False)
    assert mapped["per_class"]["Dog"]["f1"] == 1.0 and mapped["per_class"]["Dog"]["evidence"] != "own name"
    assert 0.05 < mapped["per_class"]["Dog"]["on"] <= 0.3  # above the background, at or under the bark
    assert mapped["per_class"]["Cello"]["f1"] < 0.5 and mapped["classes"] == 2
    free = ceiling(_clips(), any_output=True)
    assert free["per_class"]["Cello"] == {"f1": 1.0, "evidence": "YAMNet 'Glass'", "on": 0.02, "off": 0.02,
                                          "shortest_s": 1.0, "events": 2, "columns": [audioset_index()["Glass"]]}
    assert free["mean_f1"] == 1.0 and free["false_events_per_min"] == 0.0


def test_rules_chosen_on_training_clips_are_applied_unchanged_to_new_ones():
    clips = _clips()
    covered, predict = per_class_rules()(clips[:3])
    assert covered == {DOG, CELLO}
    assert np.flatnonzero(predict(clips[3])[:, DOG]).tolist() == [2, 3, 4, 5]  # the rule found on clips 0-2
    assert not predict(clips[4]).any()  # eventless: nothing
    covered, predict = per_class_rules(any_output=True)(clips[:3])
    assert np.flatnonzero(predict(clips[1])[:, CELLO]).tolist() == [6, 7, 8, 9]


def test_the_one_class_tracker_equals_the_experiment_s_tracker():
    rng = np.random.default_rng(3)
    for _ in range(300):
        score = rng.choice([0.0, 0.1, 0.3, 0.5, 0.7, 0.9], size=int(rng.integers(1, 20)))
        on, shortest = float(rng.choice([0.3, 0.5, 0.7])), float(rng.choice([1.0, 2.0, 3.0]))
        off = on * float(rng.choice([1.0, 0.5]))
        full = np.zeros((len(score), 25), np.float32)
        full[:, DOG] = score
        assert one_class_track(score, on, off, shortest).tolist() == tracked(full, on, off, shortest, {DOG})[:, DOG].tolist()


def test_auc_ranks_scores_and_is_neutral_without_both_sides():
    y = np.array([0, 0, 1, 1], bool)
    assert auc(np.array([0.1, 0.2, 0.8, 0.9]), y) == 1.0
    assert auc(np.array([0.9, 0.8, 0.2, 0.1]), y) == 0.0
    assert auc(np.array([0.1, 0.2]), np.array([1, 1], bool)) == 0.5
