"""The default output on real recordings: never narrower than the embedded taggers (issue 11, section 3), and
speech spans that keep a soft first word (section 5).

A clip built here (not by the corpus code) from real recordings that Debian packages carry: a cello at
9-13 s and applause at 16-19 s, then speech. The shipped PreFM knows neither class; the default (union)
output must still report both, from the AudioSet tagger, at the right seconds, with its source and taxonomy.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from training.corpus.real_sources import load_recording
from training.media.synth import RATE, ClipSpec, place, speak, write_clip

RCC = "rcc:/usr/share/gcompris-qt/rcc"
pytestmark = pytest.mark.skipif(not Path("/usr/share/gcompris-qt/rcc").is_dir(),
                                reason="gcompris-qt-data not installed (scripts/bootstrap.sh installs it)")
CELLO = f"{RCC}/instruments.rcc:gcompris/src/activities/instruments/resource/cello.ogg"
APPLAUSE = f"{RCC}/memory-sound.rcc:gcompris/src/activities/memory-sound/resource/LRApplauses_1_LA_cut.ogg"


@pytest.fixture(scope="module")
def real_clip(tmp_path_factory):
    track = np.random.default_rng(0).normal(0, 0.003, 24 * RATE).astype(np.float32)
    place(track, load_recording(CELLO)[: 4 * RATE], 9.0)
    place(track, load_recording(APPLAUSE)[: 3 * RATE], 16.0)
    place(track, speak("Please enter your password to continue."), 20.5)
    path = tmp_path_factory.mktemp("union") / "cello_applause.mp4"
    dark = np.full((180, 320, 3), 40, np.uint8)
    return write_clip(path, ClipSpec(duration_s=24, fps=5, width=320, height=180, frame_fn=lambda t: dark, audio=track))


def _events(path, events_model: str) -> list[dict]:
    from pipelines import AnalyzeOptions, StageConfig, analyze_inline

    stages = StageConfig(events_model=events_model, asr=False, safety=False, visual=False)
    return analyze_inline(str(path), AnalyzeOptions(stages=stages))["events"]


def _overlaps(event: dict, start: float, end: float) -> bool:
    return event["start"] < end and event["end"] > start


def test_default_output_keeps_what_the_tagger_finds(real_clip):
    events = _events(real_clip, "auto")
    assert all(e["source"] in ("prefm", "tags") and e["taxonomy"] in ("llp", "audioset", "coco") and e["name"]
               for e in events)
    cello = [e for e in events if e["label"] in ("Cello", "Bowed string instrument")]
    applause = [e for e in events if e["label"] in ("Applause", "Clapping")]
    assert cello and all(_overlaps(e, 9, 13) and e["source"] == "tags" and e["taxonomy"] == "audioset" for e in cello)
    assert applause and all(_overlaps(e, 16, 19) for e in applause)
    # Speech is heard from 20.5 s: one audio event, the VAD's span (no picture of a person: no audio-visual one).
    speech = [e for e in events if e["label"] == "Speech"]
    assert [(e["modality"], e["source"], e["taxonomy"]) for e in speech] == [("audio", "tags", "llp")]
    assert 20.0 <= speech[0]["start"] <= 21.5 and speech[0]["end"] >= 22.5
    assert not {"Cat", "Dog", "Motorcycle", "Bark", "Meow"} & {e["label"] for e in events}

    prefm_only = _events(real_clip, "prefm")
    assert prefm_only and all(e["source"] == "prefm" for e in prefm_only)
    assert not [e for e in prefm_only if e["label"] in ("Cello", "Applause", "Clapping")]


def test_speech_span_keeps_the_soft_first_word(real_clip):
    """After the applause the VAD fires once "Please" has begun: Whisper must hear the pre-roll before the
    span (without it, the same clip reads "enter your password to continue")."""
    from pipelines import AnalyzeOptions, StageConfig, analyze_inline

    def transcript(pre_roll: float) -> str:
        stages = StageConfig(safety=False, visual=False, tags=False, asr_pre_roll_s=pre_roll)
        return " ".join(t["text"] for t in analyze_inline(str(real_clip), AnalyzeOptions(stages=stages))["transcript"])

    assert transcript(0.5).lower().startswith("please enter your password")
    assert not transcript(0.0).lower().startswith("please")


def test_union_leaves_covered_classes_to_prefm_and_on_screen_classes_to_the_detector():
    from models.prefm import SHIPPED_CHECKPOINT
    from models.taxonomy import LLP_AUDIOSET
    from pipelines.stages.union import covered_classes, prefm_pairs, suppressed_tags

    covers = covered_classes(str(SHIPPED_CHECKPOINT))  # stamped from its training clips, not all 25 classes
    assert "Speech" in covers["audio"] and 0 < len(covers["audio"]) < len(LLP_AUDIOSET)
    suppressed = suppressed_tags(covers)
    kept = prefm_pairs(covers)
    assert {LLP_AUDIOSET[llp] for llp in covers["audio"]} <= suppressed
    assert "Applause" not in suppressed and "Cello" not in suppressed
    assert not {"Cat", "Dog", "Car", "Motorcycle", "Speech"} & kept["visual"]  # the detector's (a person for Speech)


class _Scripted:
    """An event source that closes the given events at the second they end (stands in for PreFM or tags)."""

    def __init__(self, events: list[dict]):
        self.events = events

    def step(self, record, speech, audio, visual):
        return [e for e in self.events if e["end"] == record.end], [], {}

    def finish(self, speech):
        return []


def test_a_heard_prefm_event_needs_the_tagger_to_agree():
    from models.prefm import SHIPPED_CHECKPOINT
    from pipelines.stages.config import StageConfig
    from pipelines.stages.record import Second
    from pipelines.stages.union import UnionEvents

    phone = {"label": "Telephone_bell_ringing", "modality": "audio", "start": 2.0, "end": 4.0, "source": "prefm"}
    speaker = {"label": "Speech", "modality": "audio", "start": 5.0, "end": 6.0, "source": "prefm"}
    heard = {2: {"Bark": 0.9, "Dog": 0.6}, 3: {"Bark": 0.8}, 5: {"Speech": 0.2}}  # no phone; speech too faint

    def run(tags: dict[int, dict], evidence: float) -> list[str]:
        union = UnionEvents(_Scripted([phone, speaker]), _Scripted([]), SHIPPED_CHECKPOINT, evidence)
        out = []
        for t in range(7):
            closed, _, _ = union.step(Second(index=t, start=float(t), end=float(t + 1)), {},
                                      {"available": True, "tags": tags.get(t, {})}, None)
            out += [e["label"] for e in closed]
        return out

    assert StageConfig().prefm_evidence > 0  # on by default (chosen on val)
    assert run(heard, 0.3) == []  # a phone over barking, speech the tagger barely hears: both dropped
    assert run(heard, 0.0) == ["Telephone_bell_ringing", "Speech"]  # the check off: PreFM alone
    assert run({**heard, 3: {"Ringtone": 0.5}, 5: {"Speech": 0.6}}, 0.3) == ["Telephone_bell_ringing", "Speech"]


def test_where_a_vad_runs_speech_is_the_vads_not_prefms():
    """PreFM's heard Speech stands in only where no VAD ran (the replay over stored features); on a live stream
    the VAD's span is the audio Speech event, and PreFM's own Speech pieces are dropped."""
    from models.prefm import SHIPPED_CHECKPOINT
    from pipelines.stages.config import StageConfig
    from pipelines.stages.parser import TagEvents
    from pipelines.stages.record import Second
    from pipelines.stages.union import UnionEvents

    pieces = [{"label": "Speech", "modality": m, "start": float(a), "end": float(a + 1), "source": "prefm",
               "taxonomy": "llp"} for m, a in (("audio", 1), ("audio-visual", 2), ("audio", 3))]

    def run(vad: bool) -> list[tuple]:
        union = UnionEvents(_Scripted(pieces), TagEvents(StageConfig()), SHIPPED_CHECKPOINT, 0.0)
        out = []
        for t in range(7):
            spans = [[1.0, 4.4]] if vad and t == 4 else []
            speech = {"speech_prob": 0.9 if vad and 1 <= t <= 4 else 0.0, "spans": spans, "vad": vad}
            out += union.step(Second(index=t, start=float(t), end=float(t + 1)), speech,
                              {"available": True, "tags": {}}, {"visual": {"persons": 0}})[0]
        return [(e["modality"], e["source"], e["start"], e["end"]) for e in out if e["label"] == "Speech"]

    assert run(vad=True) == [("audio", "tags", 1.0, 4.4)]
    assert run(vad=False) == [("audio", "prefm", 1.0, 2.0), ("audio", "prefm", 3.0, 4.0)]  # AV: a person's
