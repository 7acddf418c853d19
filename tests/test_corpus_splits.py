"""Held-out split: no test clip, spoken sentence or query wording ever appears in training."""

from __future__ import annotations

import pytest

from models import prefm, trisense
from training.corpus.compose import assign_splits, compose_clip
from training.corpus.layout import clip_ids
from training.corpus.sources import PICTURES, SENTENCES, SOUNDS, SPEECH_TEMPLATES, sentences_for

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
PREFM_CKPT = prefm.SHIPPED_CHECKPOINT
GROUNDER_CKPT = trisense.CORPUS_V1_CHECKPOINT


def test_split_assignment_is_deterministic_and_by_clip():
    a, b = assign_splits(120, 0), assign_splits(120, 0)
    assert a == b
    assert (a.count("train"), a.count("val"), a.count("test")) == (84, 12, 24)
    assert assign_splits(120, 1) != a
    with pytest.raises(ValueError):
        assign_splits(1, 0)


def test_wording_banks_are_disjoint():
    for bank in [*PICTURES, *SOUNDS]:
        assert not set(bank.train) & set(bank.test), bank.name
    assert not set(SPEECH_TEMPLATES["train"]) & set(SPEECH_TEMPLATES["test"])
    held, seen = sentences_for("test"), sentences_for("train")
    assert held and seen and not set(held) & set(seen)
    assert len(held) + len(seen) == len(SENTENCES)
    assert sentences_for("val") == seen


@pytest.mark.parametrize("seed,scripts", [(0, 0.0), (1, 0.7)])  # v1 and v2 (scripted) corpora
def test_composed_test_clips_share_no_clip_sentence_or_wording_with_training(seed, scripts):
    n = 30
    splits = assign_splits(n, seed)
    truths = [compose_clip(cid, split, seed, i, scripts=scripts)[0]
              for i, (cid, split) in enumerate(zip(clip_ids(n), splits, strict=True))]
    train = [t for t in truths if t.split != "test"]
    test = [t for t in truths if t.split == "test"]
    assert train and test
    assert not {t.clip_id for t in train} & {t.clip_id for t in test}
    train_queries = {q["query"] for t in train for q in t.queries}
    test_queries = {q["query"] for t in test for q in t.queries}
    assert test_queries and not train_queries & test_queries
    train_text = {a.text for t in train for a in t.audio if a.kind == "speech"}
    test_text = {a.text for t in test for a in t.audio if a.kind == "speech"}
    assert test_text and not train_text & test_text
    assert all(q["wording"] == "test" for t in test for q in t.queries)
    assert all(q["vid"] == t.clip_id for t in truths for q in t.queries)


def _rebuilt_splits(corpus: dict) -> dict[str, str]:
    """Clip id -> split, rebuilt from a stamp's seed and clip count (corpus v3 splits its clips its own way)."""
    if corpus.get("version", 1) >= 3:
        from training.corpus.compose_v3 import clip_splits

        return {f"v3clip{i:04d}": s for i, s in enumerate(clip_splits(corpus["clips"], corpus["seed"]))}
    return dict(zip(clip_ids(corpus["clips"]), assign_splits(corpus["clips"], corpus["seed"]), strict=True))


def test_shipped_checkpoints_were_trained_on_training_clips_only():
    """Each shipped model records its own corpus (PreFM and the grounder may come from different ones):
    rebuild that corpus's splits from its stamp and check the recorded training clips against them. The
    grounder also records the corpus its spoken sentences came from; val only calibrates its threshold."""
    from models.prefm.online import load_checkpoint as load_prefm
    from models.trisense import OPEN_VOCAB_CHECKPOINT
    from models.trisense.grounder import load_checkpoint as load_grounder

    _, _, prefm_meta = load_prefm(PREFM_CKPT)
    _, grounder_meta = load_grounder(GROUNDER_CKPT)  # the corpus-v1 grounder (no model selection)
    _, open_meta = load_grounder(OPEN_VOCAB_CHECKPOINT)  # the default corpus-v3 grounder
    stamps = [(prefm_meta["corpus"], ["train"]), (grounder_meta["corpus"], ["train", "val"]),
              (open_meta["corpus"], ["train"])]
    if "speech_corpus" in open_meta["corpus"]:
        stamps.append((open_meta["corpus"]["speech_corpus"], ["train"]))
    for corpus, trained_on in stamps:
        assert corpus["trained_on"] == trained_on  # PreFM selects on val, the v3 grounder calibrates on it
        splits = _rebuilt_splits(corpus)
        test_ids = {cid for cid, s in splits.items() if s == "test"}
        assert corpus["train_ids"] and not set(corpus["train_ids"]) & test_ids
        assert set(corpus["train_ids"]) == {cid for cid, s in splits.items() if s in trained_on}
