"""Events: the per-second outputs of speech, sound and picture become events, by one of three strategies.

- `UnionEvents` (the default when a PreFM checkpoint is shipped, `--events auto` or `union`): PreFM's events for
  the classes its checkpoint was trained on, plus tag events for everything else, so the default output is
  never narrower than the embedded taggers (`pipelines/stages/union.py`).
- `PrefmEvents` (`--events prefm`): PreFM's online LLP-class audio, visual and audio-visual events, with the
  model's anticipation of the next seconds. PreFM has its own Speech class, so the VAD's spans then only
  drive ASR.
- `TagEvents` (`--events tags`): AudioSet tags and detected objects merged into events, plus Speech events
  from the VAD spans (one audio event per utterance) and an audio-visual Speech event where a person is seen
  while speech is heard.

PreFM's events and the tag events go through the same merger (`models/events.py`): gaps of one second are
bridged, and events shorter than `tag_min_s` (tags) or `prefm_min_s` (PreFM) dropped.

Whichever runs, a text read on screen that stays is an event too (`pipelines/stages/ocr.py:TextEvents`).
Every event says which model produced it (`source`: prefm, tags or ocr), the taxonomy its label belongs to
(`taxonomy`: llp, audioset, coco or ocr) and its human-readable `name`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from models.errors import BadInput
from models.events import EventTracker
from pipelines.stages.config import StageConfig
from pipelines.stages.events import labelled
from pipelines.stages.record import Second

# YAMNet labels that duplicate the VAD's speech events or carry no event information.
IGNORED_TAGS = {"Silence", "Speech", "Speech synthesizer", "Narration, monologue", "Conversation",
                "Male speech, man speaking", "Female speech, woman speaking", "Inside, small room"}


def prefm_checkpoint(config: StageConfig) -> Path | None:
    """The PreFM checkpoint the parser should use, or None for tag-based events; BadInput if asked for and missing."""
    from models.prefm import SHIPPED_CHECKPOINT

    path = Path(config.prefm_checkpoint) if config.prefm_checkpoint else SHIPPED_CHECKPOINT
    if config.events_model == "tags":
        return None
    if not path.is_file():
        if config.events_model == "prefm" or config.prefm_checkpoint:
            raise BadInput(f"no PreFM checkpoint at {path}: train one with `foresight train prefm` or use --events tags")
        return None
    return path


def tag_labels(config: StageConfig, tags: dict[str, float], visual: dict | None) -> dict[tuple[str, str], float]:
    """The (label, modality) -> confidence of one second from its sound tags and detections."""
    kept = [(name, p) for name, p in tags.items() if name not in IGNORED_TAGS and p >= config.tag_threshold]
    kept.sort(key=lambda x: -x[1])
    labels = {(name, "audio"): p for name, p in kept[: config.tag_top_k]}
    best: dict[str, float] = {}
    for det in (visual or {}).get("detections", []):
        best[det["label"]] = max(best.get(det["label"], 0.0), float(det["score"]))
    if (visual or {}).get("faces"):
        best["person"] = max(best.get("person", 0.0), 0.5)  # a face is a person even when YOLO misses it
    for name, score in best.items():
        if score >= config.visual_min_score or name == "person":
            labels[(name.capitalize(), "visual")] = round(score, 3)
    return labels


SPEECH = ("Speech", "audio")
SPEAKER = ("Speech", "audio-visual")


def people_seen(visual: dict | None) -> bool:
    """A person is on screen: the visual stage counted one (its detector boxes, or a face), or, where only
    detections are known (a replay over stored features), a person box."""
    vis = visual or {}
    if "persons" in vis:
        return vis["persons"] > 0
    return any(d["label"] == "person" for d in vis.get("detections", []))


class TagEvents:
    """Sound tags and detected objects merged into events, plus Speech: one audio event per utterance (the
    VAD's spans, pauses of up to the tracker's gap bridged, held open while the VAD hears a continuation) and
    an audio-visual event on the seconds a person is seen while speech is heard (the same gap filling and
    shortest-event rule as the tags), which overlaps the audio event instead of taking turns with it."""

    def __init__(self, config: StageConfig):
        self.config = config
        self.tracker = EventTracker(max_gap=1, min_duration=config.tag_min_s)

    def step(self, record: Second, speech: dict, audio: dict, visual: dict | None) -> tuple[list, list, dict]:
        """(closed, active, anticipation) after one second."""
        vis = (visual or {}).get("visual")
        labels = tag_labels(self.config, audio.get("tags", {}), vis)
        heard = float(speech.get("speech_prob", 0.0))
        if heard >= self.config.vad_threshold and people_seen(vis):
            labels[SPEAKER] = heard
        closed = self._spans(speech)
        since = speech.get("open_since")
        closed += self.tracker.update(record.start, record.end, labels, {SPEECH: since} if since is not None else None)
        return [tag_event(e) for e in closed], [tag_event(e) for e in self.tracker.open.values()], {}

    def _spans(self, speech: dict) -> list:
        conf = max(float(speech.get("speech_prob", 0.0)), 0.5)
        return [e for a, b in speech.get("spans", []) for e in self.tracker.add_span(*SPEECH, a, b, conf)]

    def finish(self, speech: dict) -> list[dict]:
        closed = self._spans(speech) + self.tracker.finish()
        return [tag_event(e) for e in closed]


def tag_event(event) -> dict:
    """A tag event's dict: Speech from the VAD is an LLP class, other audio labels AudioSet names, visual COCO."""
    taxonomy = "llp" if event.label == "Speech" else ("audioset" if event.modality == "audio" else "coco")
    return labelled(event.to_dict(), "tags", taxonomy)


class PrefmEvents:
    """PreFM online over the audio and visual feature vectors; events and anticipation on the stream clock."""

    def __init__(self, config: StageConfig, path: Path):
        from models.prefm.online import OnlineParser
        from models.prefm.runtime import load_inference

        self.config = config
        # The network (ONNX Runtime, no torch once exported) is shared by the streams of a process; the ring
        # buffer and event merger are this stream's.
        model = load_inference(path)
        # Three AVVP streams (a heard event is one audio event, seen-and-heard an audio-visual one inside it),
        # with the tag events' gap filling and shortest-event rule.
        self.prefm = OnlineParser(model, threshold=config.prefm_threshold, exclusive=False, max_gap=1,
                                  min_duration=config.prefm_min_s)
        self.t0: float | None = None

    def step(self, record: Second, speech: dict, audio: dict, visual: dict | None) -> tuple[list, list, dict]:
        """One PreFM step (zero vectors for seconds a live gap lost): (closed, active, anticipation)."""
        c = self.prefm.config
        if self.t0 is None:
            self.t0 = float(record.start)
        target = int(round(record.start - self.t0))
        zeros_a, zeros_v = np.zeros(c.audio_dim, np.float32), np.zeros(c.visual_dim, np.float32)
        events: list[dict] = []
        while self.prefm.t < target:
            events += self.prefm.step(zeros_a, zeros_v).events
        a = audio.get("vector") if audio.get("available") else None
        v = (visual or {}).get("vector") if (visual or {}).get("available") else None
        out = self.prefm.step(zeros_a if a is None else a, zeros_v if v is None else v)
        events += out.events
        names = c.class_names or []
        expected = []
        for mod, probs in out.future.items():  # the most likely labels over the next Lf seconds
            peak = probs.max(axis=0)
            expected += [(float(peak[i]), f"{names[i]} ({mod})") for i in np.flatnonzero(peak >= self.config.prefm_threshold)]
        anticipation = {name: round(p, 3) for p, name in sorted(expected, reverse=True)[:5]}
        active = [self._shift(e) for e in self.prefm.merger.open_events()]
        return [self._shift(e) for e in events], active, anticipation

    def _shift(self, event: dict) -> dict:
        shifted = {**event, "start": round(event["start"] + self.t0, 2), "end": round(event["end"] + self.t0, 2)}
        return labelled(shifted, "prefm", "llp")

    def finish(self, speech: dict) -> list[dict]:
        return [self._shift(e) for e in self.prefm.finish()] if self.t0 is not None else []


class ParserStage:
    """Fills a second's record from the speech, audio and visual stage outputs, with events from the strategy
    the configuration selects (see the module docstring)."""

    def __init__(self, config: StageConfig):
        self.config = config
        path = prefm_checkpoint(config)
        if path is None:
            self.events = TagEvents(config)
        elif config.events_model == "prefm":
            self.events = PrefmEvents(config, path)
        else:
            from pipelines.stages.union import UnionEvents

            self.events = UnionEvents(PrefmEvents(config, path), TagEvents(config), path, config.prefm_evidence)
        from pipelines.stages.ocr import TextEvents

        self.text_events = TextEvents(config)  # text on screen, whichever strategy runs the rest

    def process(self, record: Second, speech: dict, audio: dict, visual: dict | None = None,
                ocr: dict | None = None) -> Second:
        closed, active, anticipation = self.events.step(record, speech, audio, visual)
        text_closed, text_active = self.text_events.step(record, ocr)
        closed, active = closed + text_closed, active + text_active
        record.text = list((ocr or {}).get("text") or [])
        record.speech_prob = speech["speech_prob"]
        record.speaking_since = speech.get("open_since")  # words come once it ends: Whisper waits for the end
        record.tags = audio.get("tags", {})
        record.level_db = audio.get("level_db")
        record.visual = (visual or {}).get("visual")
        record.picture = (visual or {}).get("picture")
        record.events_closed, record.events_active = closed, active
        record.anticipation = anticipation
        record.transcript = speech["transcript"]
        return record

    def finish(self, speech: dict) -> Second:
        record = Second.closing()
        record.events_closed = self.events.finish(speech) + self.text_events.finish()
        record.transcript = speech["transcript"]
        return record
