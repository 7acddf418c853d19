"""The composed corpus: labels match what was mixed into the encoded clip, and the layouts the loaders read."""

from __future__ import annotations

import json

import numpy as np
import pytest

from models.prefm.labels import LLP_INDEX
from training.corpus.compose import compose_clip, compose_corpus, render_clip
from training.corpus.mixing import audible_extent
from training.corpus.scripts import NOISE_LEVEL
from training.corpus.truth import ClipTruth, second_labels
from training.media.synth import RATE, load_audio

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _first_clip_with(kind: str, name: str, split: str = "train") -> tuple[ClipTruth, np.ndarray]:
    for i in range(40):
        truth, track = compose_clip(f"t{i}", split, seed=0, index=i)
        if any(a.kind == kind and a.name == name for a in truth.audio):
            return truth, track
    raise AssertionError(f"no {name} in 40 composed clips")


def _busy(truth: ClipTruth, t: int, pad: float = 0.1) -> bool:
    return any(a.start - pad < t + 1 and a.end + pad > t for a in truth.audio)


@pytest.mark.parametrize("sound,llp", [("phone", "Telephone_bell_ringing"), ("alarm", "Fire_alarm")])
def test_labelled_sound_seconds_carry_that_sound_in_the_encoded_clip(tmp_path, sound, llp):
    truth, track = _first_clip_with("sound", sound)
    path = render_clip(tmp_path / "c.mp4", truth, track)
    audio = load_audio(path)  # decoded back from the AAC track, as the encoder will read it
    rms = np.array([np.sqrt(np.mean(audio[t * RATE:(t + 1) * RATE] ** 2)) for t in range(truth.duration)])
    labels = second_labels(truth)["audio"][:, LLP_INDEX[llp]]
    assert labels.sum() >= 2
    item = next(a for a in truth.audio if a.name == sound)
    labelled = np.flatnonzero(labels)
    # the labelled run is the seconds the placed sound overlaps by >= 0.3 s, and they are loud
    assert labelled.min() >= int(item.start) and labelled.max() <= int(item.end)
    assert np.all(rms[labelled] > 10 * NOISE_LEVEL)
    quiet = [t for t in range(truth.duration) if not _busy(truth, t)]
    assert quiet, "expected at least one second with nothing placed"
    assert np.all(rms[quiet] < 3 * NOISE_LEVEL)
    assert rms[labelled].min() > 3 * rms[quiet].max()


def test_visual_labels_follow_shots_and_visible_speakers():
    for i in range(30):
        truth, _ = compose_clip(f"v{i}", "train", seed=3, index=i)
        y = second_labels(truth)
        for shot in truth.shots:
            seconds = range(shot.start, shot.end)
            for cls in ("Cat", "Motorcycle"):
                assert all(y["visual"][t, LLP_INDEX[cls]] == (shot.llp == cls) for t in seconds)
            for t in seconds:
                speaking = y["audio"][t, LLP_INDEX["Speech"]] == 1
                assert y["visual"][t, LLP_INDEX["Speech"]] == (shot.person and speaking)
        assert [s.start for s in truth.shots][0] == 0 and truth.shots[-1].end == truth.duration
        assert all(b.start == a.end and a.end - a.start >= 3 for a, b in zip(truth.shots, truth.shots[1:], strict=False))
        assert y["audio"][:, [LLP_INDEX[c] for c in ("Cat", "Motorcycle")]].sum() == 0


def test_audible_extent_trims_silence():
    wave = np.zeros(RATE * 2, np.float32)
    wave[RATE // 2: RATE] = 0.5
    assert audible_extent(wave) == pytest.approx((0.5, 1.0))
    with pytest.raises(ValueError):
        audible_extent(np.zeros(10, np.float32))


def test_tiny_corpus_layout_is_what_the_loaders_read(tmp_path):
    from training.prefm.data import ClipStore, read_split_csv
    from training.trisense.data import load_moment_jsonl

    truths = compose_corpus(tmp_path, 2, seed=5, progress=False)
    assert {t.split for t in truths} == {"train", "test"}
    for t in truths:
        assert (tmp_path / "clips" / f"{t.clip_id}.mp4").stat().st_size > 10_000
        y = np.load(tmp_path / "label" / "label" / "audio" / f"{t.clip_id}.npy")
        assert y.shape == (t.duration, 25)
        assert json.loads((tmp_path / "truth" / f"{t.clip_id}.json").read_text())["clip_id"] == t.clip_id
    rows = read_split_csv(tmp_path / "data_info" / "test_pd.csv")
    assert [r[0] for r in rows] == [t.clip_id for t in truths if t.split == "test"]
    records = load_moment_jsonl(tmp_path / "grounding" / "test.jsonl")
    assert records and all(r.extra["wording"] == "test" for r in records)
    for r in records:
        s, e = r.windows[0]
        assert 0 <= s < e <= r.duration
    # features are not there yet: the PreFM loader says so instead of failing later
    with pytest.raises(FileNotFoundError):
        ClipStore("embedded", tmp_path, "test")
    # composing again is deterministic and keeps the encoded clips
    before = (tmp_path / "clips" / f"{truths[0].clip_id}.mp4").stat().st_mtime_ns
    again = compose_corpus(tmp_path, 2, seed=5, progress=False)
    assert [a.to_dict() for a in again] == [t.to_dict() for t in truths]
    assert (tmp_path / "clips" / f"{truths[0].clip_id}.mp4").stat().st_mtime_ns == before


def test_bad_arguments_are_refused(tmp_path, capsys):
    from training.corpus.cli import build_main

    assert build_main(["--out", str(tmp_path), "--clips", "1", "--no-features"]) == 2
    assert "error:" in capsys.readouterr().err
    assert build_main(["--out", str(tmp_path), "--clips", "4", "--min-seconds", "3", "--no-features"]) == 2
    capsys.readouterr()
    assert build_main(["--out", str(tmp_path), "--clips", "4", "--pose", "openpose", "--no-features"]) == 2
    assert "--pose: unknown pose model 'openpose'" in capsys.readouterr().err


def test_the_corpus_pose_flag_reaches_the_encoder_settings():
    from training.corpus.cli import _visual_config

    assert _visual_config(None, None) is None  # the app's defaults
    assert _visual_config(None, None, "movenet-multipose").pose_model == "movenet-multipose"


# --------------------------------------------------------------------------------------------------
# Scripted clips (corpus v2)
# --------------------------------------------------------------------------------------------------


def _scripted(script: str, split: str = "train", seed: int = 1, tries: int = 40) -> ClipTruth:
    for i in range(tries):
        truth, _ = compose_clip(f"s{i}", split, seed=seed, index=i, scripts=1.0)
        if truth.script == script:
            return truth
    raise AssertionError(f"no {script} clip in {tries} scripted clips")


def _check_layout_and_labels(truth: ClipTruth) -> dict[str, np.ndarray]:
    """The v1 invariants hold for scripted clips too: contiguous shots of >= 3 s, one category each, sources
    inside the clip, and labels that follow the documented rules (0.3-s overlap, visible speaker)."""
    assert truth.shots[0].start == 0 and truth.shots[-1].end == truth.duration
    assert all(b.start == a.end and a.end - a.start >= 3 for a, b in zip(truth.shots, truth.shots[1:], strict=False))
    assert len({s.category for s in truth.shots}) == len(truth.shots)
    assert all(0 < a.start < a.end <= truth.duration for a in truth.audio)
    y = second_labels(truth)
    for it in truth.audio:
        if it.llp is None:
            continue
        for t in range(truth.duration):
            overlap = min(it.end, t + 1) - max(it.start, t)
            if overlap >= 0.3:
                assert y["audio"][t, LLP_INDEX[it.llp]] == 1
    for shot in truth.shots:
        for t in range(shot.start, shot.end):
            speaking = y["audio"][t, LLP_INDEX["Speech"]] == 1
            assert y["visual"][t, LLP_INDEX["Speech"]] == (shot.person and speaking)
            for cls in ("Cat", "Motorcycle"):
                assert y["visual"][t, LLP_INDEX[cls]] == (shot.llp == cls)
    return y


def test_scripts_zero_is_the_v1_composition():
    for i in range(6):
        v1, track1 = compose_clip(f"c{i}", "train", seed=0, index=i)
        same, track2 = compose_clip(f"c{i}", "train", seed=0, index=i, scripts=0.0)
        assert same.to_dict() == v1.to_dict() and "script" not in v1.to_dict()
        np.testing.assert_array_equal(track1, track2)
    # the share decides per clip from its own stream; non-scripted clips of a mixed corpus are v1 clips
    mixed = [compose_clip(f"c{i}", "train", seed=0, index=i, scripts=0.5)[0] for i in range(12)]
    assert {bool(t.script) for t in mixed} == {True, False}
    for i, t in enumerate(mixed):
        if not t.script:
            assert t.to_dict() == compose_clip(f"c{i}", "train", seed=0, index=i)[0].to_dict()
    assert ClipTruth.from_dict(mixed[0].to_dict()).to_dict() == mixed[0].to_dict()


@pytest.mark.parametrize("script,sound,llp", [("phone_call", "phone", "Telephone_bell_ringing"),
                                              ("alarm_answer", "alarm", "Fire_alarm")])
def test_scripted_call_is_a_sound_then_a_person_who_speaks(script, sound, llp):
    truth = _scripted(script)
    y = _check_layout_and_labels(truth)
    ring = np.flatnonzero(y["audio"][:, LLP_INDEX[llp]])
    speech = np.flatnonzero(y["audio"][:, LLP_INDEX["Speech"]])
    seen = np.flatnonzero(y["visual"][:, LLP_INDEX["Speech"]])
    assert len(ring) >= 2 and len(speech) >= 1 and len(seen) >= 1
    assert ring.max() < speech.min()  # the sound first, then the answer
    first = next(s for s in truth.shots if s.person)
    item = next(a for a in truth.audio if a.name == sound)
    assert first.start >= item.end  # the person cuts in after the sound
    reply = min(a.start for a in truth.audio if a.kind == "speech")
    assert first.start <= reply <= first.start + 0.6  # and speaks right after the cut
    assert seen.min() == speech.min()


def test_scripted_conversation_and_showcase_have_regular_timing():
    talk = _scripted("conversation")
    _check_layout_and_labels(talk)
    turns = [a for a in talk.audio if a.kind == "speech"]
    assert len(turns) >= 2
    for a, b in zip(turns, turns[1:], strict=False):
        assert 0.7 <= round(b.start - a.end, 2) <= 0.9
        assert a.voice != b.voice
    show = _scripted("showcase")
    _check_layout_and_labels(show)
    cues = [a for a in show.audio if a.name == "camera-shutter"]
    for shot in show.shots[1:]:
        # every cut of the showcase is announced by the cue click ending just before it
        assert any(0.1 <= shot.start - c.end <= 0.3 + 1e-6 for c in cues), shot
    assert any(s.llp in ("Cat", "Motorcycle") for s in show.shots)


def test_scripted_test_clips_speak_held_out_sentences_only():
    from training.corpus.sources import sentences_for

    held = {text for text, _ in sentences_for("test")}
    spoken = [a.text for i in range(10)
              for a in compose_clip(f"h{i}", "test", seed=2, index=i, scripts=1.0)[0].audio if a.kind == "speech"]
    assert spoken and set(spoken) <= held
    queries = [q for i in range(4) for q in compose_clip(f"h{i}", "test", seed=2, index=i, scripts=1.0)[0].queries]
    assert queries and all(q["wording"] == "test" for q in queries)


def test_scripted_share_is_checked(tmp_path):
    with pytest.raises(ValueError):
        compose_corpus(tmp_path, 2, scripts=1.5, progress=False)
    with pytest.raises(ValueError):
        compose_corpus(tmp_path, 2, min_s=8, max_s=10, scripts=0.5, progress=False)
