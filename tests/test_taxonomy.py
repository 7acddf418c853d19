"""The LLP <-> AudioSet <-> COCO map: complete, consistent with YAMNet's class map, readable names."""

from __future__ import annotations

import pytest

from models.prefm.labels import LLP_CLASSES
from models.taxonomy import (
    LLP_AUDIOSET,
    LLP_COCO,
    audioset_names,
    audioset_to_llp,
    check_complete,
    llp_yamnet_index,
    llp_yamnet_indices,
    readable,
)


def test_every_llp_class_is_a_yamnet_class():
    check_complete()
    assert set(LLP_AUDIOSET) == set(LLP_CLASSES)
    names = audioset_names()
    assert len(names) == 521
    for llp in LLP_CLASSES:
        assert names[llp_yamnet_index(llp)] == LLP_AUDIOSET[llp]
        assert audioset_to_llp(LLP_AUDIOSET[llp]) == llp


def test_known_indices():
    assert llp_yamnet_index("Speech") == 0
    assert llp_yamnet_index("Dog") == 69
    assert llp_yamnet_index("Telephone_bell_ringing") == 384
    assert llp_yamnet_index("Violin_fiddle") == 186


def test_related_indices_start_with_own_class_and_are_known():
    names = set(audioset_names())
    for llp in LLP_CLASSES:
        idx = llp_yamnet_indices(llp)
        assert idx[0] == llp_yamnet_index(llp)
        assert len(set(idx)) == len(idx)
    assert "Bark" in names and audioset_names()[llp_yamnet_indices("Dog")[1]] == "Bark"


def test_readable_names():
    assert readable("Telephone_bell_ringing") == "Telephone bell ringing"
    assert readable("Frying_(food)") == "Frying (food)"
    assert readable("Chicken_rooster") == "Chicken, rooster"
    assert readable("Violin, fiddle", "audioset") == "Violin, fiddle"
    assert readable("cell phone", "coco") == "Cell phone"


def test_coco_names_are_the_detectors_own():
    from models.encoders.weights import yolo_files

    detector = {n.strip() for n in yolo_files()[2].read_text().splitlines() if n.strip()}
    assert set(LLP_COCO.values()) <= detector and "motorbike" in LLP_COCO.values()


def test_unknown_labels_are_refused():
    with pytest.raises(ValueError):
        readable("Kazoo")
    with pytest.raises(ValueError):
        readable("dog", "imagenet")
