"""The default event output: PreFM where it was trained, the embedded taggers everywhere else.

A PreFM checkpoint knows only the LLP classes its training corpus held (`meta["covers"]`, stamped by
`training/corpus/ship.py`); an AudioSet tagger and a COCO detector know hundreds more. `UnionEvents` keeps
both, so the default output is never narrower than the taggers:

- PreFM's events for the (class, modality) pairs it covers;
- tag events for everything else: a tag is dropped only when PreFM speaks for it, i.e. its AudioSet name
  is a covered audio class or one of that class's related names (`models/taxonomy.py`);
- a PreFM event that is heard is kept only when the tagger agrees (`prefm_evidence`): its class's AudioSet
  name or a related one scores at least that much in one of the event's seconds, so PreFM, trained on
  few recordings, cannot report a ringing phone over factory noise on its own;
- on screen, the detector speaks for the classes it can see (Cat, Dog, Car, Motorcycle, and a person for
  Speech): PreFM's visual input carries a colour histogram and a thumbnail, and on real footage they alone
  fire Cat or Motorcycle on frames with nothing in them, while the detector's boxes need the object. PreFM's
  visual events of those classes are therefore left to the detector;
- Speech, where the VAD runs (every live stream with audio), is the tag path's: one audio event per
  utterance from the VAD's spans, and an audio-visual one where a person is seen while it is heard
  (`parser.TagEvents`). PreFM's heard Speech is dropped there; it stands in only where no VAD ran (the
  replay over stored features in `training/perception/report.py`).
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path

from models.taxonomy import LLP_AUDIOSET, LLP_COCO, heard_as
from pipelines.stages.record import Second

MODALITIES = ("audio", "visual")


@lru_cache(maxsize=8)
def covered_classes(path: str) -> dict[str, frozenset[str]]:
    """The LLP classes per modality (audio, visual) a checkpoint was trained on; every class it has when the
    checkpoint predates the stamp. Read from the ONNX export's metadata when there is one (no torch)."""
    from models.prefm.runtime import checkpoint_info

    config, meta = checkpoint_info(path)
    covers = meta.get("covers")
    if covers is None:
        names = frozenset(config.class_names or LLP_AUDIOSET)
        return {m: names for m in MODALITIES}
    return {m: frozenset(covers.get(m, ())) for m in MODALITIES}


def prefm_pairs(covers: dict[str, frozenset[str]]) -> dict[str, frozenset[str]]:
    """The classes PreFM's events are kept for, per modality: covered, and on screen not a detector class."""
    detector = set(LLP_COCO)
    return {"audio": covers["audio"], "visual": covers["visual"] - detector}


def suppressed_tags(covers: dict[str, frozenset[str]]) -> frozenset[str]:
    """The AudioSet tag labels PreFM speaks for: covered classes' AudioSet names and their related names (the
    VAD's Speech events are LLP events and stay)."""
    return frozenset().union(*(heard_as(llp) for llp in covers["audio"]))


class UnionEvents:
    """PreFM events for covered classes plus tag events for the rest (see the module docstring)."""

    def __init__(self, prefm, tags, checkpoint: Path, evidence: float = 0.0, memory_s: int = 600):
        self.prefm, self.tags = prefm, tags
        covers = covered_classes(str(checkpoint))
        self.kept, self.suppressed = prefm_pairs(covers), suppressed_tags(covers)
        self.evidence, self.memory_s = evidence, memory_s
        self.names = {llp: heard_as(llp) for llp in covers["audio"]}
        self.heard: dict[int, dict[str, float]] = {}  # second -> the tags it handed on (the last `memory_s`)
        self.vad = False  # a VAD ran on this stream: Speech is the tag path's

    def step(self, record: Second, speech: dict, audio: dict, visual: dict | None) -> tuple[list, list, dict]:
        """(closed, active, anticipation) after one second."""
        self.heard[record.index] = dict(audio.get("tags") or {}) if audio.get("available", True) else {}
        self.heard.pop(record.index - self.memory_s, None)
        self.vad = self.vad or bool(speech.get("vad"))
        p_closed, p_active, anticipation = self.prefm.step(record, speech, audio, visual)
        t_closed, t_active, _ = self.tags.step(record, speech, audio, visual)
        closed = self._keep_prefm(p_closed) + self._keep_tags(t_closed)
        active = self._keep_prefm(p_active) + self._keep_tags(t_active)
        return closed, active, anticipation

    def finish(self, speech: dict) -> list[dict]:
        return self._keep_prefm(self.prefm.finish(speech)) + self._keep_tags(self.tags.finish(speech))

    def _keep_prefm(self, events: list[dict]) -> list[dict]:
        return [e for e in events if all(e["label"] in self.kept[m] for m in _modalities(e)) and self._agreed(e)
                and not (self.vad and e["label"] == "Speech")]

    def _agreed(self, event: dict) -> bool:
        """Visual only, the check off, or the tagger heard the class in one of the event's seconds."""
        if self.evidence <= 0 or event["modality"] == "visual":
            return True
        names = self.names.get(event["label"], frozenset())
        seconds = range(int(event["start"]), max(int(event["start"]) + 1, int(math.ceil(event["end"]))))
        return any(p >= self.evidence for t in seconds for n, p in self.heard.get(t, {}).items() if n in names)

    def _keep_tags(self, events: list[dict]) -> list[dict]:
        """AudioSet tags PreFM speaks for are dropped; the VAD's Speech (an LLP label) is never."""
        return [e for e in events if e["modality"] != "audio" or e["taxonomy"] != "audioset"
                or e["label"] not in self.suppressed]


def _modalities(event: dict) -> tuple[str, ...]:
    return MODALITIES if event["modality"] == "audio-visual" else (event["modality"],)
