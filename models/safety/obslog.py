"""Tier (b)'s input: a rolling observation log in PaSBench's format, written from live signals.

Every `segment_s` seconds of one camera become one segment: `[Time]` on the stream clock,
`[Location]` the camera name, `[Environmental Observation]` what was seen and heard around people
(objects, sounds, text on signs, camera state) and `[Behavioral Observation]` what people did (postures, falls,
speech, events). Sentences are plain English so the same retriever that reads PaSBench logs reads
these. Only the last `window` segments are kept.
"""

from __future__ import annotations

import re
from collections import Counter, deque

from models.safety.logparse import Segment, render_log
from models.safety.signals import SecondSignals

NO_PERSON = "No person is seen."
_PRESENCE = re.compile(r"^(?:\d+ (?:person is|people are) present\.|No person is seen\.)$")


def is_presence(sentence: str) -> bool:
    """True for the sentences that only say who is there: they name no act and no hazard."""
    return bool(_PRESENCE.match(sentence.strip()))


def clock(seconds: float) -> str:
    """Stream time as hh:mm:ss."""
    s = int(seconds)
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _count_phrase(name: str, n: int) -> str:
    if n == 1:
        return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"
    return f"{n} {name}s" if not name.endswith("s") else f"{n} {name}"


def describe(seconds: list[SecondSignals], tag_prob: float = 0.3, fall_velocity: float = 0.8) -> Segment:
    """One segment summarising consecutive seconds of one camera."""
    if not seconds:
        raise ValueError("describe needs at least one second of signals")
    objects: Counter[str] = Counter()
    tags: dict[str, float] = {}
    postures: Counter[str] = Counter()
    people = 0
    falls = 0
    speech, events, trouble, signs = [], [], [], []
    for s in seconds:
        for k, v in s.objects.items():
            objects[k] = max(objects[k], int(v))
        for k, v in s.audio_tags.items():
            tags[k] = max(tags.get(k, 0.0), float(v))
        people = max(people, s.people())
        for p in s.pose if s.people() else ():  # a posture counts only in a second where someone is seen
            postures[p.get("posture", "unknown")] += 1
            falls += float(p.get("vertical_velocity", 0.0)) >= fall_velocity
        if s.speech_text.strip():
            speech.append(s.speech_text.strip())
        for text in s.signs:
            if text.strip() and text.strip() not in signs:
                signs.append(text.strip())
        for ev in s.events:
            if ev.get("taxonomy") == "ocr":  # a text on screen is said once, as a sign, not as an activity
                continue
            if ev.get("label") and ev["label"] not in events:
                events.append(str(ev["label"]))
        if s.camera_trouble and s.camera_trouble not in trouble:
            trouble.append(s.camera_trouble)

    env = []
    things = [_count_phrase(k, v) for k, v in sorted(objects.items()) if k != "person" and v > 0]
    if things:
        env.append(f"Visible: {', '.join(things)}.")
    heard = [k for k, v in sorted(tags.items(), key=lambda kv: -kv[1]) if v >= tag_prob and k != "Speech"]
    if heard:
        env.append(f"Sounds heard: {'; '.join(heard)}.")
    if signs:
        env.append(" ".join(f'A sign reads "{text}".' for text in signs[:5]))
    if trouble:
        env.append(f"The camera view is {' and '.join(trouble)}.")

    beh = []
    if people:
        beh.append(f"{people} {'person is' if people == 1 else 'people are'} present.")
    for posture in ("lying", "sitting", "standing"):
        secs = postures[posture]
        if secs:
            where = "down on the floor " if posture == "lying" else ""
            beh.append(f"A person is {posture} {where}for about {secs} seconds." if secs >= 2
                       else f"A person is briefly {posture}.")
    if falls:
        beh.append("A person drops suddenly towards the floor.")
    said = f'Someone says: "{" ".join(speech)}".' if speech else ""
    if said:
        beh.append(said)
    visual = [e for e in events if e not in heard]
    if visual:
        beh.append(f"Detected activity: {', '.join(visual)}.")
    if not beh or beh == [said]:
        beh.insert(0, NO_PERSON)
    return Segment(time=clock(seconds[0].time), location=seconds[0].camera,
                   environment=" ".join(env), behavior=" ".join(beh), speech=said)


class ObservationLog:
    """Buffers seconds per camera and closes a segment every `segment_s` seconds."""

    def __init__(self, segment_s: float = 10.0, window: int = 8):
        if segment_s <= 0 or window < 1:
            raise ValueError("segment_s must be > 0 and window >= 1")
        self.segment_s = segment_s
        self.segments: deque[Segment] = deque(maxlen=window)
        self._open: dict[str, list[SecondSignals]] = {}

    def add(self, s: SecondSignals) -> Segment | None:
        """Add one second; returns the segment it closed, if any."""
        buf = self._open.setdefault(s.camera, [])
        closed = None
        if buf and s.time - buf[0].time >= self.segment_s:
            closed = self.close(s.camera)
            buf = self._open.setdefault(s.camera, [])
        buf.append(s)
        return closed

    def close(self, camera: str) -> Segment | None:
        """Close the open segment of `camera` now (end of stream)."""
        buf = self._open.pop(camera, [])
        if not buf:
            return None
        seg = describe(buf)
        self.segments.append(seg)
        return seg

    def open_cameras(self) -> list[str]:
        """Cameras with seconds not yet written into a segment."""
        return list(self._open)

    def append(self, segment: Segment) -> None:
        """Add a ready-made segment (replaying a PaSBench log)."""
        self.segments.append(segment)

    def text(self) -> str:
        """The log in PaSBench's layout."""
        return render_log(list(self.segments))
