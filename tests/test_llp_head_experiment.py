"""The learned-LLP-head experiment (`training/perception/llp_head.py`): its grouped folds never let a labelled
recording feed both sides of a fold, its event tracking is causal hysteresis with the live tracker's rules, and
the hand map's evidence for a class is the best of its own AudioSet names."""

from __future__ import annotations

import numpy as np

from models.prefm.labels import LLP_CLASSES
from models.taxonomy import audioset_index
from training.perception.llp_head import Clip, grouped_folds, mapped_scores, tracked

DOG = LLP_CLASSES.index("Dog")


def _clip(i: int, labelled: dict[str, str]) -> Clip:
    return Clip(f"c{i}", "train", np.zeros((4, 521), np.float32), np.zeros((4, 1024), np.float32),
                np.zeros((4, 25), np.int64), labelled)


def test_grouped_folds_keep_every_labelled_recording_on_one_side():
    rng = np.random.default_rng(0)
    recordings = {f"{llp}:{r}": llp for llp in ("Dog", "Cello", "Clapping") for r in range(3)}
    names = sorted(recordings)
    clips = [_clip(i, {n: recordings[n] for n in rng.choice(names, size=rng.integers(0, 3), replace=False)})
             for i in range(60)]
    split = grouped_folds(clips, 3, seed=1)
    held_in: dict[str, int] = {}
    for f, (train, held) in enumerate(split):
        seen = {s for c in train for s in c.labelled}
        assert held and not seen & {s for c in held for s in c.labelled}
        assert not {c.id for c in train} & {c.id for c in held}
        for c in held:
            assert held_in.setdefault(c.id, f) == f  # a clip is scored in one fold at most
    assert grouped_folds(clips, 3, seed=1)[0][1] == split[0][1]  # the same seed deals the same folds


def test_tracked_opens_on_the_high_threshold_holds_on_the_low_one_and_drops_short_events():
    s = np.zeros((10, 25), np.float32)
    s[1:6, DOG] = [0.6, 0.9, 0.6, 0.6, 0.1]  # opens at 0.9 (second 2), holds at 0.6 while >= 0.5
    s[8, DOG] = 0.95  # one second only
    pred = tracked(s, on=0.8, off=0.5, min_s=2.0, classes={DOG})
    assert np.flatnonzero(pred[:, DOG]).tolist() == [2, 3, 4]
    assert tracked(s, 0.8, 0.5, 1.0, {DOG})[:, DOG].nonzero()[0].tolist() == [2, 3, 4, 8]
    assert not tracked(s, 0.8, 0.5, 1.0, set()).any()


def test_mapped_scores_take_the_best_of_a_class_s_own_names():
    p = np.zeros((2, 521), np.float32)
    p[0, audioset_index()["Bark"]] = 0.7
    p[1, audioset_index()["Music"]] = 0.9  # generic: evidence for no instrument
    m = mapped_scores(p)
    assert m[0, DOG] == np.float32(0.7) and m[1].max() == 0.0
