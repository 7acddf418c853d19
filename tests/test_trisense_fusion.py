"""The calibrated fusion of the learned grounder with text matching (`models/trisense/fusion.py`): the rule itself,
the val-chosen calibration stored next to the default checkpoint, and the fused answer on a real clip's features
held in the REST search's store."""

from __future__ import annotations

import json

import pytest

from models.trisense import OPEN_VOCAB_CHECKPOINT, SHIPPED_CHECKPOINT
from models.trisense.fusion import FusionConfig, fuse
from models.trisense.grounder import Grounder, Moment, fusion_path

AUDIO = {"visual": 0.0, "audio": 1.0, "speech": 0.0}
MAX = FusionConfig("max", 0.5, learned_threshold=0.4, text_threshold=0.4)


def moment(start: float, end: float, score: float) -> Moment:
    return Moment("a violin is playing", start, end, score, dict(AUDIO))


def test_max_answers_with_the_method_that_clears_its_own_threshold():
    """The model places the violin under its threshold, text matching names it: the text span is the answer."""
    learned, text = [moment(0, 2, 0.30)], [moment(5, 7, 0.75)]
    top = fuse(learned, text, MAX)[0]
    assert (top.start, top.end) == (5, 7) and top.score == pytest.approx(0.5 + 0.35)
    both_low = fuse([moment(0, 2, 0.30)], [moment(5, 7, 0.35)], MAX)[0]
    assert both_low.score < MAX.threshold  # neither clears its own threshold: "not found"


def test_agreeing_methods_keep_the_span_of_the_method_that_carries_the_score():
    learned, text = [moment(4, 8, 0.70)], [moment(5, 7, 0.45)]  # overlap IoU 0.5: each supports the other
    ranked = fuse(learned, text, MAX)
    assert [(m.start, m.end) for m in ranked] == [(4, 8), (5, 7)]
    assert ranked[0].score == ranked[1].score == pytest.approx(0.5 + 0.30)
    mix = fuse(learned, text, FusionConfig("mix", 0.4, weight=0.75))
    assert mix[0].score == pytest.approx(0.75 * 0.70 + 0.25 * 0.45)
    with pytest.raises(ValueError, match="mode"):
        FusionConfig("mean", 0.5)


def test_the_default_grounder_carries_a_val_chosen_fusion():
    assert SHIPPED_CHECKPOINT == OPEN_VOCAB_CHECKPOINT
    stored = json.loads(fusion_path(SHIPPED_CHECKPOINT).read_text())
    assert stored["chosen_on"] == "val" and "fusion_trials" in stored["command"]
    fused = Grounder.from_pretrained()
    alone = Grounder.load(SHIPPED_CHECKPOINT, text_encoder=fused.text_encoder, fused=False)
    assert fused.fusion == FusionConfig.from_dict(stored["fusion"]) and alone.fusion is None
    assert fused.threshold == stored["fusion"]["threshold"] and alone.threshold == alone.config.abstain_threshold
    assert fused.fusion.learned_threshold == pytest.approx(alone.threshold)


def test_search_over_the_store_answers_an_unseen_sound_and_declines_an_absent_one(tmp_path):
    """A real corpus-v3 clip with a recorded violin (a train clip, so no test clip is looked at; Violin is a held-out
    concept: no training query of the checkpoint named it), the first whose violin the model alone declines. The
    fused grounder answers it from text matching over the tagger's label events (a moment inside the recording's
    span; how well it fits the span is the evaluation's business, `docs/grounding.md`), directly and through the
    REST search's SQLite store with the same moment, and an absent concept is "not found"."""
    from pathlib import Path

    from app.services.search import SearchService
    from models.trisense.baselines import TextMatchBaseline
    from models.trisense.modeling_trisense import temporal_iou
    from pipelines.sinks.grounding_index import GroundingIndex
    from pipelines.sinks.store import Store
    from training.trisense.open_vocab import OpenVocabData

    corpus = Path(__file__).resolve().parents[1] / "data" / "corpus_v3"
    if not (corpus / "grounding" / "train.jsonl").is_file():
        pytest.skip("corpus v3 not built (foresight train corpus --version 3 --out data/corpus_v3)")
    data = OpenVocabData(corpus)
    fused = Grounder.from_pretrained()
    alone = Grounder.load(SHIPPED_CHECKPOINT, text_encoder=fused.text_encoder, fused=False)
    assert "Violin_fiddle" in fused.meta["corpus"]["held_out_concepts"]
    record = next(r for r in data.records["train"] if r.extra["category"] == "Violin_fiddle"
                  and not alone.answer(r.query, data.features[r.vid]).found)
    clip = data.features[record.vid]
    answer = fused.answer(record.query, clip)
    top_text = TextMatchBaseline(fused.text_encoder).ground(record.query, clip, top_k=1)[0]
    span = (answer.moments[0].start, answer.moments[0].end) if answer.found else None
    assert span is not None and temporal_iou(span, (top_text.start, top_text.end)) >= 0.3  # text matching's answer
    assert temporal_iou(span, record.windows[0]) > 0  # inside the violin's span
    store = Store(tmp_path / "store.db")
    try:
        GroundingIndex(store, fused).add("violin-clip", clip)
        service = SearchService(store, SHIPPED_CHECKPOINT)
        found = service.search(record.query)
        assert found["trisense"]["found"] and found["trisense"]["threshold"] == round(fused.threshold, 4)
        top = next(m for m in found["moments"] if m["method"] == "trisense")
        assert (top["start"], top["end"]) == span and top["score"] >= fused.threshold
        absent = service.search("a dog is barking")
        assert absent["trisense"]["found"] is False and absent["trisense"]["best_score"] < fused.threshold
    finally:
        store.close()
