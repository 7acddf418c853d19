"""The open-vocabulary grounder (`OPEN_VOCAB_CHECKPOINT`, the default) on words it was never trained on: text-aligned
evidence, spoken words, and "not found". `grounder` is what the app loads (fused with text matching); `learned` is
the same checkpoint's model alone, for what the evidence channel itself does."""

from __future__ import annotations

import json

import numpy as np
import pytest

from models.trisense import OPEN_VOCAB_CHECKPOINT
from models.trisense.evidence import EVIDENCE_DIM, clip_evidence, second_labels
from models.trisense.features import ClipFeatures
from models.trisense.grounder import Grounder
from models.trisense.modeling_trisense import temporal_iou
from models.trisense.text import speech_features
from tests.helpers.cli import run_cli

T = 30
TAGS = {  # what YAMNet shows for the clip: violin 2-6 s, cello 9-13 s, applause 16-20 s, speech 23-26 s
    range(2, 6): {"Violin, fiddle": 0.8, "Bowed string instrument": 0.6, "Music": 0.7},
    range(9, 13): {"Cello": 0.7, "Bowed string instrument": 0.6, "Music": 0.6},
    range(16, 20): {"Applause": 0.8, "Clapping": 0.6, "Crowd": 0.4},
    range(23, 26): {"Speech": 0.9},
}
SPOKEN = [{"start": 23.0, "end": 26.0, "text": "Please tell me the password for the network."}]


@pytest.fixture(scope="module")
def grounder() -> Grounder:
    return Grounder.from_pretrained(OPEN_VOCAB_CHECKPOINT)


@pytest.fixture(scope="module")
def learned(grounder) -> Grounder:
    return Grounder.load(OPEN_VOCAB_CHECKPOINT, text_encoder=grounder.text_encoder, fused=False)


@pytest.fixture(scope="module")
def clip(grounder) -> ClipFeatures:
    """Uninformative learned features (the taggers' names and the transcript are all there is to go on)."""
    labels = []
    for t in range(T):
        tags = next((tags for seconds, tags in TAGS.items() if t in seconds), {"Silence": 0.4})
        labels += second_labels(float(t), tags, {"detections": [{"label": "person", "score": 0.6}]})
    speech, mask = speech_features(SPOKEN, T, encoder=grounder.text_encoder)
    return ClipFeatures(visual=np.zeros((T, grounder.dims["visual"])), audio=np.zeros((T, grounder.dims["audio"])),
                        speech=speech, speech_mask=mask, transcript=SPOKEN, labels=labels)


def test_evidence_follows_the_named_classes_and_the_words(learned, clip):
    grounder = learned
    q = grounder.embed_query("a violin is playing")
    ev = clip_evidence(q, clip, grounder.text_encoder)
    assert ev.shape == (3, T, EVIDENCE_DIM)
    audio = ev[1, :, 0]
    assert int(np.argmax(audio)) in range(2, 6) and audio[3] > audio[10] > audio[17]  # violin > cello > applause
    assert ev[0, :, 3].all() and not ev[2, :23, 3].any() and ev[2, 23:26, 3].all()  # person seen; words at 23-26
    spoken = clip_evidence(grounder.embed_query("someone asks for a password"), clip, grounder.text_encoder)
    assert spoken[2, 24, 0] > 0.4 and spoken[2, 24, 0] > spoken[1, 24, 0]


def test_the_open_vocabulary_checkpoint_is_calibrated(grounder, learned):
    assert grounder.config.evidence_dim == EVIDENCE_DIM
    assert grounder.threshold is not None and 0.0 < grounder.threshold < 1.0
    assert learned.threshold == grounder.config.abstain_threshold and 0.0 < learned.threshold < 1.0
    assert "test" not in grounder.meta["corpus"]["trained_on"]


@pytest.mark.parametrize("query,span", [("a violin is playing", (2, 6)), ("a cello is playing", (9, 13))])
def test_unseen_concepts_are_localised_through_the_evidence(learned, clip, query, span):
    """Violin and cello are held-out concepts: no training query named them, and the learned features here say
    nothing, so only the evidence can place them. The scores stay under the calibrated threshold on such a clip
    (docs/grounding.md: unseen concepts are mostly abstained on), so this checks the moment before abstention."""
    top = learned.answer(query, clip, top_k=1, abstain=False).moments[0]
    assert temporal_iou((top.start, top.end), span) >= 0.3, top
    assert top.modality_weights["audio"] > top.modality_weights["visual"]
    absent = learned.answer("a dog is barking", clip, top_k=1, abstain=False).moments[0]
    assert top.score > absent.score


def test_a_speech_query_uses_the_transcript(grounder, learned, clip):
    """The spoken sentence is found through the transcript's embedding, with most weight on speech; the fused
    answer (transcript matching clears its threshold) finds it too, where the model alone scores under its own."""
    top = learned.answer("someone asks for a password", clip, top_k=1, abstain=False).moments[0]
    assert temporal_iou((top.start, top.end), (23, 26)) >= 0.3 and top.modality_weights["speech"] > 0.4, top
    fused = grounder.answer("someone asks for a password", clip, top_k=1)
    assert fused.found and temporal_iou((fused.moments[0].start, fused.moments[0].end), (23, 26)) >= 0.3
    assert fused.moments[0].modality_weights["speech"] > 0.4


def test_an_absent_concept_is_not_found(grounder, clip):
    answer = grounder.answer("a dog is barking", clip)
    assert not answer.found and answer.moments == [] and answer.best_score < grounder.threshold
    assert answer.to_dict()["found"] is False
    raw = grounder.answer("a dog is barking", clip, abstain=False)  # the same moment, before the threshold
    assert raw.moments and raw.moments[0].score == pytest.approx(answer.best_score, abs=1e-6)


def test_search_over_the_store_says_not_found(grounder, clip, tmp_path):
    """The REST search's service over a real SQLite store: the grounder's verdict travels with the moments."""
    from app.services.search import SearchService
    from pipelines.sinks.grounding_index import GroundingIndex
    from pipelines.sinks.store import Store

    store = Store(tmp_path / "store.db")
    try:
        index = GroundingIndex(store, grounder)
        index.add("issue-clip", clip)
        service = SearchService(store, OPEN_VOCAB_CHECKPOINT)
        absent = service.search("a dog is barking")
        assert absent["moments"] == [] and absent["trisense"]["found"] is False
        assert absent["trisense"]["best_score"] < absent["trisense"]["threshold"]
        spoken = service.search("someone asks for a password")
        assert spoken["trisense"]["best_score"] > absent["trisense"]["best_score"]
        assert all(m["method"] == "trisense" and m["score"] >= spoken["trisense"]["threshold"]
                   for m in spoken["moments"])
    finally:
        store.close()


def test_cli_answers_not_found_an_unseen_sound_and_a_spoken_sentence(demo_clip):
    """The real CLI with its default grounder on the demo clip (espeak speech that mentions a phone, a phone ringing,
    an alarm; no instrument anywhere). Telephone is a held-out concept: no training query of the checkpoint named
    it; the fused answer finds the ring, not the sentence about it."""
    from app.summary import render_summary

    path, truth = demo_clip
    queries = ["a cello is playing", "someone talks about the front door", "a telephone is ringing"]
    args = [a for q in queries for a in ("--query", q)]
    proc = run_cli("analyze", str(path), "--no-safety", "--json", *args, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    answers = {a["query"]: a for a in result["answers"]}
    assert answers["a cello is playing"]["found"] is False
    assert answers["a cello is playing"]["best_score"] < answers["a cello is playing"]["threshold"]
    assert not [m for m in result["moments"] if m["query"] == "a cello is playing"]
    assert "'a cello is playing': not found" in render_summary(result)
    door = [m for m in result["moments"] if m["query"] == "someone talks about the front door"]
    assert answers["someone talks about the front door"]["found"] and door
    assert door[0]["start"] < truth.speech[1] and door[0]["end"] > truth.speech[0]
    assert door[0]["modality_weights"]["speech"] > 0.4
    phone = [m for m in result["moments"] if m["query"] == "a telephone is ringing"]
    assert answers["a telephone is ringing"]["found"] and phone
    assert temporal_iou((phone[0]["start"], phone[0]["end"]), truth.phone) >= 0.3, phone[0]
    assert phone[0]["modality_weights"]["audio"] > phone[0]["modality_weights"]["speech"]


def test_perception_grounding_reports_the_documented_keys():
    """What `foresight eval perception` calls; scored on val here (test is scored once per shipped model)."""
    from pathlib import Path

    from training.trisense.generalise import perception_grounding

    corpus = Path(__file__).resolve().parents[1] / "data" / "corpus_v3"
    if not (corpus / "grounding" / "val.jsonl").is_file():
        pytest.skip("corpus v3 not built (foresight train corpus --version 3 --out data/corpus_v3)")
    with pytest.raises(ValueError, match="split"):
        perception_grounding(corpus, "dev")
    out = perception_grounding(corpus, "val")
    assert {"r1_iou03", "r1_iou05", "miou", "abstention_accuracy", "per_modality", "held_out_concepts"} <= set(out)
    assert set(out["per_modality"]) == {"visual", "audio", "speech"} and out["per_modality"]["speech"]["n"] > 0
    assert 0.0 <= out["r1_iou05"] <= out["r1_iou03"] <= 1.0 and out["n_absent"] > 0
    assert out["threshold"] == pytest.approx(Grounder.from_pretrained(OPEN_VOCAB_CHECKPOINT).threshold)
