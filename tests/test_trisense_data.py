"""Loaders for moment-retrieval jsonl and TriSense-2M JSON, ClipFeatures I/O and per-second speech text."""

import json

import numpy as np
import pytest

from models.trisense.features import ClipFeatures
from models.trisense.text import per_second_text, speech_features, transcript_words
from training.trisense.data import (
    FeatureDir,
    load_annotations,
    load_moment_jsonl,
    load_trisense_json,
    usable_records,
)

QVHL_LINE = {"qid": 8737, "query": "A family is playing basketball together on a green court outside.",
             "duration": 126, "vid": "bP5KfdFJzC4_660.0_810.0", "relevant_clip_ids": [0, 1, 2],
             "saliency_scores": [[4, 1, 1], [4, 1, 1], [4, 2, 1]], "relevant_windows": [[0, 16], [20, 24.5]]}
CHARADES_LINE = {"qid": 0, "query": "a person is putting a book on a shelf.", "vid": "AO8RW", "duration": 33.79,
                 "relevant_windows": [[0.0, 6.9]]}


def test_moment_jsonl_qvhighlights_and_charades(tmp_path):
    path = tmp_path / "val.jsonl"
    path.write_text(json.dumps(QVHL_LINE) + "\n\n" + json.dumps(CHARADES_LINE) + "\n")
    recs = load_moment_jsonl(path)
    assert len(recs) == 2
    assert recs[0].qid == "8737" and recs[0].windows == [(0.0, 16.0), (20.0, 24.5)]
    assert recs[0].duration == 126.0 and recs[0].extra["relevant_clip_ids"] == [0, 1, 2]
    assert recs[1].vid == "AO8RW" and recs[1].windows == [(0.0, 6.9)]
    assert load_annotations(path)[1].query == CHARADES_LINE["query"]


@pytest.mark.parametrize(
    "line, reason",
    [({"qid": 1, "query": "x", "vid": "v"}, "missing"),
     ({"qid": 1, "query": "x", "vid": "v", "relevant_windows": [[5, 2]]}, "end before start"),
     ({"qid": 1, "query": "x", "vid": "v", "relevant_windows": []}, "non-empty")],
)
def test_moment_jsonl_bad_records(tmp_path, line, reason):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(line) + "\n")
    with pytest.raises(ValueError, match=reason):
        load_moment_jsonl(path)


def test_missing_and_unknown_files(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_moment_jsonl(tmp_path / "nope.jsonl")
    with pytest.raises(FileNotFoundError):
        load_trisense_json(tmp_path / "nope.json")
    (tmp_path / "a.csv").write_text("x")
    with pytest.raises(ValueError):
        load_annotations(tmp_path / "a.csv")
    with pytest.raises(FileNotFoundError):
        FeatureDir(tmp_path / "nofeatures")


def test_trisense_after_judger_records(tmp_path):
    records = [{
        "video": "mPcah3P2D-E", "times": [[38.0, 64.1]],
        "audio": "Sounds like a man is speaking...", "visual": "a man is standing in front of a bus...",
        "speech": "that use Shimano like Byron Merida...",
        "original_avs": "Shimano helps its teams with time trial technology.",
        "original_av": "A man is speaking and breathing.", "original_vs": "A man is discussing bike components.",
        "model_response": "{}",
        "eval_result": {"AVS": {"caption": "A man explains Shimano's time trial support.", "score": 5,
                                "decision": "KEEP"},
                        "AV": {"caption": "A man speaks.", "score": 2, "decision": "REJECT"},
                        "VS": {"caption": "A man discusses bike components.", "score": 5, "decision": "KEEP"}},
        "success": True,
    }]
    path = tmp_path / "TriSense-2M-After-Judger.json"
    path.write_text(json.dumps(records))
    recs = load_trisense_json(path, durations={"mPcah3P2D-E": 120.0})
    assert [r.setting for r in recs] == ["AVS", "VS"]  # the rejected AV caption is skipped
    assert recs[0].query == "A man explains Shimano's time trial support."
    assert recs[0].windows == [(38.0, 64.1)] and recs[0].duration == 120.0 and recs[0].vid == "mPcah3P2D-E"


def test_trisense_conversation_records(tmp_path):
    records = [{
        "video": "IwUIKDTErNo.mp4",
        "conversations": [
            {"from": "human", "value": "<video>\nBetween [795.6, 802.1], I need a summary of the video."},
            {"from": "gpt", "value": "<sync><time><time>Miyoko Miyazawa, a nurse for almost 40 years"},
            {"from": "human", "value": "When does 'a nurse talks about her long career' happen in the video?"},
            {"from": "gpt", "value": "<sync><time><time>"},
        ],
        "times": [[795.6, 802.1], [795.6, 802.1], [], [790.0, 805.5]],
    }, {
        "video": "activitynet/v_7LmSZAoD6-c.mp4",
        "conversations": [{"from": "human", "value": "<video>\nDoes the athlete run quickly?"},
                          {"from": "gpt", "value": "<sync><time>Quickly."}],
        "times": [[], []], "id": 0,
    }]
    path = tmp_path / "stage3.json"
    path.write_text(json.dumps(records))
    recs = load_annotations(path)
    assert len(recs) == 1  # the captioning turn and the video-level QA are not grounding
    assert recs[0].query == "a nurse talks about her long career"
    assert recs[0].vid == "IwUIKDTErNo" and recs[0].windows == [(790.0, 805.5)]


def test_trisense_json_must_be_a_list(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"video": "a"}))
    with pytest.raises(ValueError, match="list"):
        load_trisense_json(path)


def test_clip_features_roundtrip_restrict_and_window(tmp_path):
    rng = np.random.default_rng(0)
    clip = ClipFeatures(
        visual=rng.standard_normal((10, 4)), audio=rng.standard_normal((10, 3)),
        speech=rng.standard_normal((10, 5)), speech_mask=np.arange(10) % 2 == 0,
        transcript=[{"start": 2.0, "end": 5.0, "text": "hello there friend"}],
        events=[{"label": "Bark", "modality": "audio", "start": 6, "end": 8},
                {"label": "dog", "modality": "visual", "start": 1, "end": 3}],
    )
    clip.save(tmp_path / "v1.npz")
    back = FeatureDir(tmp_path)["v1"]
    assert np.allclose(back.visual, clip.visual) and back.audio.dtype == np.float32
    assert back.speech_mask.tolist() == clip.speech_mask.tolist()
    assert back.transcript == clip.transcript and back.events == clip.events
    va = clip.restricted(("visual", "audio"))
    assert va.speech is None and va.transcript == [] and [e["label"] for e in va.events] == ["Bark", "dog"]
    v = clip.restricted(["visual"])
    assert v.audio is None and [e["label"] for e in v.events] == ["dog"]
    w = clip.window(4, 9)
    assert w.num_seconds == 5 and np.allclose(w.visual, clip.visual[4:9])
    assert w.transcript == [{"start": 0.0, "end": 1.0, "text": "hello there friend"}]
    assert w.events == [{"label": "Bark", "modality": "audio", "start": 2.0, "end": 4.0}]


def test_clip_features_validation():
    with pytest.raises(ValueError):
        ClipFeatures()
    with pytest.raises(ValueError):
        ClipFeatures(visual=np.zeros((5, 2)), audio=np.zeros((6, 2)))
    with pytest.raises(ValueError):
        ClipFeatures(visual=np.zeros(5))
    with pytest.raises(ValueError):
        ClipFeatures(visual=np.zeros((5, 2))).restricted(["audio"])


def test_usable_records_skips_videos_without_features(tmp_path):
    ClipFeatures(visual=np.zeros((3, 2))).save(tmp_path / "AO8RW.npz")
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps(CHARADES_LINE) + "\n" + json.dumps(QVHL_LINE) + "\n")
    kept, skipped = usable_records(load_moment_jsonl(path), FeatureDir(tmp_path))
    assert [r.vid for r in kept] == ["AO8RW"] and skipped == 1


def test_transcript_words_and_per_second_text():
    segs = [{"start": 0.0, "end": 2.0, "text": "one two three four"},
            {"start": 3.0, "end": 4.0, "words": [{"start": 3.0, "end": 3.4, "word": "five"},
                                                 {"start": 3.5, "end": 3.9, "word": "six"}]}]
    words = transcript_words(segs)
    assert [w for _, _, w in words] == ["one", "two", "three", "four", "five", "six"]
    assert words[1][:2] == (0.5, 1.0)
    texts = per_second_text(segs, 5)
    assert texts == ["one two", "three four", "", "five six", ""]
    assert per_second_text(segs, 5, context_s=1.0)[2] == "three four five six"
    with pytest.raises(ValueError):
        transcript_words([{"start": 2.0, "end": 1.0, "text": "x"}])


def test_speech_features_embed_words_of_each_second():
    segs = [{"start": 0.0, "end": 2.0, "text": "could you tell me the password"},
            {"start": 5.0, "end": 6.0, "text": "the dog is barking"}]
    feats, mask = speech_features(segs, 8)
    assert feats.shape == (8, 384) and mask.tolist() == [True, True, False, False, False, True, False, False]
    assert np.allclose(feats[~mask], 0.0)
    assert np.allclose(np.linalg.norm(feats[mask], axis=1), 1.0, atol=1e-4)
    from models.sentences import shared_encoder

    q = shared_encoder().encode("a dog barks")
    assert feats[5] @ q > feats[0] @ q
