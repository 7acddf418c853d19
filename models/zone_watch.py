"""Watches that name a zone ("a person stays in the doorway"): answered by the tracker's zone events, not by
the grounder.

A standing query that names one of the stream's zones (as a word, `_` and `-` read as spaces) is a zone watch.
It fires on a zone event of that zone whose kind its verb names (stays, waits, loiters... -> `loiter`; leaves,
exits -> `zone_exit`; anything else -> `zone_enter`) and whose object it names, if it names one (a COCO label,
its plural, or "someone", "people", "a man"... for `person`). The grounder scores how well a second's sounds
and pictures fit words; it has no idea where on the picture a zone is, so it must not answer these.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PERSON_WORDS = ("person", "people", "someone", "somebody", "anyone", "anybody", "man", "men", "woman", "women",
                "child", "children", "kid", "kids", "visitor", "visitors", "intruder", "intruders")
VEHICLE_WORDS = {"vehicle": ("car", "truck", "bus", "motorcycle", "motorbike"), "bike": ("bicycle", "motorbike")}
LOITER_WORDS = ("stay", "stays", "staying", "stayed", "loiter", "loiters", "loitering", "linger", "lingers",
                "lingering", "wait", "waits", "waiting", "remain", "remains", "remaining", "stand", "stands",
                "standing", "hang", "hangs", "hanging", "dwell", "dwells")
EXIT_WORDS = ("leave", "leaves", "leaving", "left", "exit", "exits", "exiting", "exited")


@dataclass(frozen=True)
class ZoneWatch:
    query: str
    zone: str
    kind: str  # "zone_enter", "zone_exit" or "loiter"
    labels: tuple[str, ...] | None  # the COCO labels it names, None: any object

    def matches(self, event: dict) -> bool:
        return (event.get("zone") == self.zone and event.get("kind") == self.kind
                and (self.labels is None or event.get("label") in self.labels))


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower().replace("_", " ").replace("-", " "))


def zone_watch(query: str, zones: tuple[str, ...] | list[str], coco_labels: tuple[str, ...]) -> ZoneWatch | None:
    """The zone watch `query` is, given the stream's zone names and the detector's labels; None if it names no
    zone (then it is the grounder's)."""
    words = _words(query)
    text = " " + " ".join(words) + " "
    named = [z for z in zones if " " + " ".join(_words(z)) + " " in text]
    if not named:
        return None
    zone = max(named, key=len)  # "back door" over "door"
    kind = ("loiter" if any(w in LOITER_WORDS for w in words)
            else "zone_exit" if any(w in EXIT_WORDS for w in words) else "zone_enter")
    labels: set[str] = set()
    if any(w in PERSON_WORDS for w in words):
        labels.add("person")
    for word, means in VEHICLE_WORDS.items():
        if word in words or word + "s" in words:
            labels.update(means)
    for label in coco_labels:
        name = " " + " ".join(_words(label)) + " "
        if name in text or name.rstrip() + "s " in text:
            labels.add(label)
    return ZoneWatch(query, zone, kind, tuple(sorted(labels)) or None)


def zone_moment(watch: ZoneWatch, event: dict, fired_at: float | None) -> dict:
    """The moment a zone watch fires: the event's time (since the object entered, for a loiter), score 1."""
    end = float(event["time"])
    start = end - float(event.get("dwell_s") or 0.0) if watch.kind == "loiter" else end
    return {"query": watch.query, "start": round(start, 3), "end": round(end, 3), "score": 1.0,
            "modality_weights": {"visual": 1.0, "audio": 0.0, "speech": 0.0}, "method": "zone",
            "zone": watch.zone, "label": event.get("label"), "track_id": event.get("track_id"),
            "standing": True, "fired_at": fired_at}
