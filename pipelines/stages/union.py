"""The default event output: PreFM where it was trained, the embedded taggers everywhere else.

A PreFM checkpoint knows only the LLP classes its training corpus held (`meta["covers"]`, stamped by
`training/corpus/ship.py`); an AudioSet tagger and a COCO detector know hundreds more. `UnionEvents` keeps
both, so the default output is never narrower than the taggers:

- PreFM's events for the (class, modality) pairs it covers;
- tag events for everything else: a tag is dropped only when PreFM speaks for it, i.e. its AudioSet name
  is a covered audio class or one of that class's related names (`models/taxonomy.py`);
- on screen, the detector speaks for the classes it can see (Cat, Dog, Car, Motorcycle): PreFM's visual
  input carries a colour histogram and a thumbnail, and on real footage they alone fire Cat or Motorcycle
  on frames with nothing in them, while the detector's boxes need the object. PreFM's visual events of
  those classes are therefore left to the detector; its visual Speech (a speaker on screen) stays.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from models.taxonomy import LLP_AUDIOSET, LLP_COCO, LLP_RELATED
from pipelines.stages.record import Second

MODALITIES = ("audio", "visual")


@lru_cache(maxsize=8)
def covered_classes(path: str) -> dict[str, frozenset[str]]:
    """The LLP classes per modality (audio, visual) a checkpoint was trained on; every class it has when the
    checkpoint predates the stamp."""
    import torch

    payload = torch.load(path, map_location="cpu", weights_only=True)
    covers = (payload.get("meta") or {}).get("covers")
    if covers is None:
        names = frozenset(payload["config"].get("class_names") or LLP_AUDIOSET)
        return {m: names for m in MODALITIES}
    return {m: frozenset(covers.get(m, ())) for m in MODALITIES}


def prefm_pairs(covers: dict[str, frozenset[str]]) -> dict[str, frozenset[str]]:
    """The classes PreFM's events are kept for, per modality: covered, and on screen not a detector class."""
    detector = {llp for llp in LLP_COCO if llp != "Speech"}
    return {"audio": covers["audio"], "visual": covers["visual"] - detector}


def suppressed_tags(covers: dict[str, frozenset[str]]) -> frozenset[str]:
    """The audio tag labels PreFM speaks for: covered classes' AudioSet names and their related names (the
    VAD's Speech spans are dropped too when PreFM covers Speech)."""
    names: set[str] = set()
    for llp in covers["audio"]:
        names |= {LLP_AUDIOSET[llp], *LLP_RELATED.get(llp, ())}
    return frozenset(names)


class UnionEvents:
    """PreFM events for covered classes plus tag events for the rest (see the module docstring)."""

    def __init__(self, prefm, tags, checkpoint: Path):
        self.prefm, self.tags = prefm, tags
        covers = covered_classes(str(checkpoint))
        self.kept, self.suppressed = prefm_pairs(covers), suppressed_tags(covers)

    def step(self, record: Second, speech: dict, audio: dict, visual: dict | None) -> tuple[list, list, dict]:
        """(closed, active, anticipation) after one second."""
        p_closed, p_active, anticipation = self.prefm.step(record, speech, audio, visual)
        t_closed, t_active, _ = self.tags.step(record, speech, audio, visual)
        closed = self._keep_prefm(p_closed) + self._keep_tags(t_closed)
        active = self._keep_prefm(p_active) + self._keep_tags(t_active)
        return closed, active, anticipation

    def finish(self, speech: dict) -> list[dict]:
        return self._keep_prefm(self.prefm.finish(speech)) + self._keep_tags(self.tags.finish(speech))

    def _keep_prefm(self, events: list[dict]) -> list[dict]:
        return [e for e in events if all(e["label"] in self.kept[m] for m in _modalities(e))]

    def _keep_tags(self, events: list[dict]) -> list[dict]:
        return [e for e in events if e["modality"] != "audio" or e["label"] not in self.suppressed]


def _modalities(event: dict) -> tuple[str, ...]:
    return MODALITIES if event["modality"] == "audio-visual" else (event["modality"],)
