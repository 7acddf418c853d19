"""Choosing on val which classes a PreFM checkpoint speaks for in the default output."""

from __future__ import annotations

import torch

from training.prefm.union_coverage import choose_covers, restamp


def _report(audio: dict, visual: dict) -> dict:
    return {"audio_event_f1": {"per_class": audio}, "visual_event_f1": {"per_class": visual}}


def test_a_class_stays_covered_only_where_the_union_beats_the_taggers():
    union = _report({"Dog": 0.5, "Cello": 0.4, "Speech": 1.0, "Banjo": 0.9}, {"Cat": 0.2})
    tags = _report({"Dog": 0.2, "Cello": 0.4, "Speech": 0.0}, {"Cat": 0.6})
    trained = {"audio": ["Cello", "Dog", "Speech", "Violin_fiddle"], "visual": ["Cat"]}
    # a tie goes to the taggers, an untrained class (Banjo) is never covered, an absent one (Violin) neither
    assert choose_covers(union, tags, trained) == {"audio": ["Dog", "Speech"], "visual": []}


def test_restamp_replaces_the_coverage_and_keeps_the_weights(tmp_path):
    src = tmp_path / "a.pt"
    torch.save({"state_dict": {"w": torch.ones(2)}, "config": {}, "meta": {"covers": {"audio": ["Dog", "Cat"]},
                                                                             "corpus": {"name": "v4"}}}, src)
    out = restamp(src, tmp_path / "b.pt", {"audio": ["Dog"]}, {"split": "val"})
    payload = torch.load(out, weights_only=True)
    assert payload["meta"]["covers"] == {"audio": ["Dog"], "visual": []}
    assert payload["meta"]["covers_chosen"] == {"split": "val"} and payload["meta"]["corpus"] == {"name": "v4"}
    assert torch.equal(payload["state_dict"]["w"], torch.ones(2))
