"""Events that read as a person would write them (issue 28, item 5): one merger for tags and PreFM (gap filling,
shortest-event rule), one audio Speech event per utterance from the VAD's spans, an audio-visual Speech event
only where a person is seen while speech is heard, overlapping the audio event instead of taking turns."""

from __future__ import annotations

import numpy as np

from models.events import EventTracker
from models.prefm.online import EventMerger
from pipelines.stages.config import StageConfig
from pipelines.stages.parser import TagEvents
from pipelines.stages.record import Second


def _spans(events: list[dict], label: str = "Speech") -> list[tuple[str, float, float]]:
    return sorted((e["modality"], e["start"], e["end"]) for e in events if e["label"] == label)


def test_prefm_flicker_is_one_event_with_the_tag_events_gap_filling():
    """PreFM-like per-second output: heard throughout, seen on alternate seconds. The old one-lane merger
    (exclusive, no gap filling) gives alternating audio / audio-visual pieces; the live setting gives one audio
    event and one audio-visual event inside it, and a one-second blip is dropped by the shortest-event rule."""
    p_audio = np.array([0.1, 0.9, 0.95, 0.9, 0.9, 0.9, 0.9, 0.9, 0.1, 0.1, 0.1, 0.9, 0.1, 0.1])
    p_visual = np.array([0.1, 0.1, 0.9, 0.1, 0.9, 0.9, 0.9, 0.9, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1])

    def run(merger: EventMerger) -> list[dict]:
        out = []
        for t, (a, v) in enumerate(zip(p_audio, p_visual, strict=True)):
            pa, pv = np.array([a]), np.array([v])
            out += merger.update(t, {"audio": pa, "visual": pv, "av": np.sqrt(pa * pv)})
        return out + merger.flush()

    old = run(EventMerger(["Speech"], 0.7))
    assert [m for m, _, _ in sorted(_spans(old), key=lambda s: s[1])][:4] == [
        "audio", "audio-visual", "audio", "audio-visual"]
    live = run(EventMerger(["Speech"], 0.7, exclusive=False, max_gap=1, min_duration=2.0))
    assert _spans(live) == [("audio", 1.0, 8.0), ("audio-visual", 2.0, 8.0), ("visual", 2.0, 8.0)]


def test_tracker_gap_filling_shortest_event_and_a_close_that_a_jump_forces():
    tracker = EventTracker(max_gap=1, min_duration=2.0)
    key = ("Dog", "audio")
    closed = []
    for t, on in enumerate([1, 0, 1, 1, 0, 0, 1, 0, 0]):
        closed += tracker.update(float(t), float(t + 1), {key: 0.8} if on else {})
    assert [(e.start, e.end) for e in closed] == [(0.0, 4.0)]  # the gap at 1 s bridged; the blip at 6 s dropped
    tracker.update(20.0, 21.0, {key: 0.8})
    assert [(e.start, e.end) for e in tracker.update(30.0, 31.0, {key: 0.9})] == []  # 20-21 is too short
    tracker.update(31.0, 32.0, {key: 0.9})
    # A second long after the last (a live gap): the open event is closed and returned, never lost.
    assert [(e.start, e.end) for e in tracker.update(40.0, 41.0, {key: 0.9})] == [(30.0, 32.0)]


def _second(t: int) -> Second:
    return Second(index=t, start=float(t), end=float(t + 1))


def _feed(seconds: list[tuple[float, list, float | None, int]]) -> list[dict]:
    """TagEvents over (speech_prob, closed spans, open_since, persons) per second, then the end of stream."""
    events = TagEvents(StageConfig())
    out = []
    for t, (prob, spans, since, persons) in enumerate(seconds):
        speech = {"speech_prob": prob, "spans": spans, "vad": True, "open_since": since}
        closed, _, _ = events.step(_second(t), speech, {"tags": {}}, {"visual": {"persons": persons}})
        out += closed
    return out + events.finish({"speech_prob": 0.0, "spans": [], "vad": True})


def test_one_audio_speech_event_per_utterance_from_the_vad_spans():
    """Two VAD spans 0.6 s apart (a pause) are one utterance; the first is held open while the VAD is still in
    the second span; a span that starts 3 s later is a new utterance."""
    seconds = [(0.0, [], None, 0), (0.9, [], 1.0, 0), (0.9, [], 1.0, 0), (0.9, [[1.0, 3.2]], 3.8, 0),
               (0.9, [], 3.8, 0), (0.9, [[3.8, 5.5]], None, 0), (0.1, [], None, 0), (0.1, [], None, 0),
               (0.1, [], None, 0), (0.9, [], 9.0, 0), (0.1, [[9.0, 9.8]], None, 0), (0.0, [], None, 0)]
    assert _spans(_feed(seconds)) == [("audio", 1.0, 5.5), ("audio", 9.0, 9.8)]


def test_audio_visual_speech_only_where_a_person_is_seen_and_it_overlaps_the_audio_event():
    speaking = [(0.95, [], 0.5, 0), (0.95, [], 0.5, 1), (0.95, [], 0.5, 1), (0.95, [], 0.5, 0),
                (0.95, [], 0.5, 1), (0.95, [], 0.5, 1), (0.95, [[0.5, 6.6]], None, 0), (0.0, [], None, 0)]
    assert _spans(_feed(speaking)) == [("audio", 0.5, 6.6), ("audio-visual", 1.0, 6.0)]
    nobody = [(p, s, since, 0) for p, s, since, _ in speaking]
    assert _spans(_feed(nobody)) == [("audio", 0.5, 6.6)]
    silent = [(0.05, [], None, 1)] * 6
    assert _spans(_feed(silent)) == []


def test_a_span_cut_for_whisper_stays_one_speech_event(demo_clip):
    """A monologue longer than `max_span_s` is cut into pieces for Whisper; the events join the pieces into one
    utterance (before, the part before the cut was lost: only the tail became a Speech event)."""
    from pipelines import AnalyzeOptions, analyze_inline

    path, truth = demo_clip
    stages = StageConfig(events_model="tags", asr=False, safety=False, visual=False, tags=False, max_span_s=3.0)
    speech = [e for e in analyze_inline(str(path), AnalyzeOptions(stages=stages))["events"] if e["label"] == "Speech"]
    assert len(speech) == 1 and speech[0]["modality"] == "audio"
    assert abs(speech[0]["start"] - truth.speech[0]) < 0.5 and abs(speech[0]["end"] - truth.speech[1]) < 0.8


def test_a_pose_is_kept_only_on_a_person_box():
    from models.encoders.people import match, people

    def pose(x0, y0, x1, y1, nose=None):
        marks = [[x0, y0, 0.0, 0.9], [x1, y1, 0.0, 0.9], [x0, y1, 0.0, 0.9], [x1, y0, 0.0, 0.9]]
        if nose:
            marks[0] = [*nose, 0.0, 0.9]
        return {"posture": "standing", "landmarks": marks}

    detections = [{"label": "person", "score": 0.8, "box": [100, 50, 300, 400]},
                  {"label": "cat", "score": 0.9, "box": [400, 200, 600, 400]}]
    faces = [[120, 60, 180, 120], [650, 40, 700, 100]]  # the first inside the person box, the second not
    found = people(detections, faces)
    assert [(p["source"], p["box"]) for p in found] == [("detector", [100, 50, 300, 400]), ("face", [650, 40, 700, 100])]
    w, h = 800, 500
    on_person = pose(120 / w, 70 / h, 290 / w, 390 / h)
    on_cat = pose(420 / w, 210 / h, 590 / w, 390 / h)
    under_face = pose(640 / w, 60 / h, 720 / w, 300 / h, nose=(675 / w, 70 / h))
    kept = match([on_cat, on_person, under_face], found, w, h)
    assert [(p["person"], p["posture"]) for p in kept] == [(0, "standing"), (1, "standing")]
    assert kept[0]["box"] == [120.0, 70.0, 290.0, 390.0]
    assert match([on_cat], found, w, h) == [] and match([on_person], [], w, h) == []
