"""Extra training queries from the taggers' own outputs: spans follow the stated rule, held-out concepts are never
named (neither as answers nor as negatives), negatives are names the clip never fires."""

from __future__ import annotations

import random

import numpy as np

from models.trisense.evidence import second_labels
from models.trisense.features import ClipFeatures
from training.trisense.tagger_queries import (
    MIN_CONFIDENCE,
    TaggerQueries,
    build_queries,
    excluded,
    spans_of,
)

T = 20
TAGS = {  # second -> YAMNet tags shown in it
    **{t: {"Music": 0.9, "Cello": 0.8, "Bowed string instrument": 0.7} for t in range(2, 6)},
    **{t: {"Applause": 0.8, "Crowd": 0.2} for t in (8, 9, 11)},  # one silent second in the run: merged
    **{t: {"Car alarm": 0.9, "Vehicle": 0.7, "Bark": 0.6} for t in range(13, 16)},
    17: {"Applause": 0.3},  # under the confidence floor: not firing
}
TEMPLATES = {"audio": ("{x} is heard",), "visual": ("{x} is on screen",)}


def _clip() -> ClipFeatures:
    labels = []
    for t in range(T):
        det = {"detections": [{"label": "bicycle", "score": 0.4}] if t in (1, 2, 3) else []}
        labels += second_labels(float(t), TAGS.get(t, {"Silence": 0.2}), det)
    return ClipFeatures(visual=np.zeros((T, 2)), audio=np.zeros((T, 2)), labels=labels)


_INDEX: dict[str, int] = {}


def _encode(texts):
    """One one-hot vector per distinct name: no two names are close in text."""
    return np.stack([np.eye(64)[_INDEX.setdefault(t.lower(), len(_INDEX))] for t in texts])


def test_spans_merge_one_silent_second_and_keep_min_length():
    assert spans_of([8, 9, 11]) == [(8.0, 12.0)]
    assert spans_of([1, 5, 6], gap=1, min_len=2) == [(5.0, 7.0)]
    assert spans_of([1, 2, 4, 5], gap=0, min_len=1) == [(1.0, 3.0), (4.0, 6.0)]


def test_queries_follow_the_rule_and_skip_held_out_names():
    pool = {(r.extra["modality"], r.extra["category"]): r for r in build_queries({"c": _clip()}, ("Cello", "Car", "Dog"))}
    assert pool[("audio", "Music")].windows == [(2.0, 6.0)]
    assert pool[("audio", "Applause")].windows == [(8.0, 12.0)]  # 17 s is under MIN_CONFIDENCE
    assert MIN_CONFIDENCE["audio"] > 0.3
    assert pool[("visual", "Bicycle")].windows == [(1.0, 4.0)]
    assert ("audio", "Silence") not in pool  # fires all the time at low confidence only
    for name in ("Cello", "Bowed string instrument", "Car alarm", "Vehicle", "Bark"):  # held out, relative, shared word
        assert ("audio", name) not in pool
        assert excluded(name, ("Cello", "Car", "Dog"))
    assert not excluded("Music", ("Cello", "Car", "Dog")) and not excluded("Applause", ("Cello",))


def test_negatives_are_names_the_clip_never_fires_and_never_held_out():
    other = ClipFeatures(visual=np.zeros((T, 2)), audio=np.zeros((T, 2)),
                         labels=[lab for t in range(4) for lab in second_labels(float(t), {"Doorbell": 0.9}, {})])
    tq = TaggerQueries({"c": _clip(), "d": other}, ("Cello", "Car", "Dog"), _encode)
    assert "Doorbell" in tq.absent[("c", "audio")] and "Music" not in tq.absent[("c", "audio")]
    drawn = tq.draw(50, random.Random(0), TEMPLATES, "e0")
    negatives = [r for r in drawn if r.extra.get("negative")]
    assert negatives and all(r.query.endswith(("is heard", "is on screen")) for r in drawn)
    for r in negatives:
        fired = {lab["label"] for lab in (_clip() if r.vid == "c" else other).labels if lab["modality"] == r.extra["modality"]}
        assert r.extra["category"] not in fired
    assert not any(excluded(r.extra["category"], ("Cello", "Car", "Dog")) for r in drawn)
