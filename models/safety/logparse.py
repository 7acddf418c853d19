"""Tolerant reader and writer for PaSBench-style observation logs.

PaSBench logs were written by an LLM and their markup drifts: `[Time] 06:30 AM` lines, markdown
`**[Location]**` with the tag on its own line, bare `**Time**` headings, `---` separators, full-width
brackets `【】`, `Label:` colons, and prose segments headed only by `**06:30 AM - Bedroom**`. The
parser first normalises the markup, then reads a flat list of (field, text) pairs and groups them into
segments; a new segment starts at a time stamp or when a field repeats.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FIELDS = ("time", "location", "environment", "behavior")
_TAG_NAMES = {
    "time": "time", "location": "location",
    "environmental observation": "environment", "environment": "environment",
    "behavioral observation": "behavior", "behavioural observation": "behavior", "behavior": "behavior",
}
# A tag: "[Time] x", "[Time]" alone, "Time:" x, or "Time" alone on its line.
_TAG = re.compile(
    r"^\s*(?:\[\s*(?P<b>[A-Za-z ]+?)\s*\]\s*:?|(?P<p>time|location|environmental observation|"
    r"behaviou?ral observation)\s*(?::|$))\s*(?P<rest>.*)$",
    re.IGNORECASE,
)
_TIME = r"\d{1,2}:\d{2}(?::\d{2})?\s*(?:[AaPp]\.?[Mm]\.?)?"
# A heading made only of a time (maybe bracketed), optionally "- Location" or ", Location".
_HEADING = re.compile(rf"^\s*\[?\s*(?P<t>{_TIME})\s*\]?\s*(?:[-–—,|]\s*(?P<loc>.+?))?\s*$")
# Numbering lines such as "Entry 1" or "Segment 3:" carry no observation.
_NUMBERING = re.compile(r"^\s*(?:log\s+)?(?:entry|segment|observation|record)\s*#?\s*\d+\s*:?\s*$", re.IGNORECASE)
_CLOCK = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2}))?\s*([AaPp])?")


@dataclass
class Segment:
    """One timed observation: when, where, what the surroundings were and what people did."""

    time: str = ""
    location: str = ""
    environment: str = ""
    behavior: str = ""
    speech: str = ""  # the part of `behavior` that only reports what someone said (live logs)

    def text(self, with_speech: bool = True) -> str:
        """Everything observed in the segment, as one passage; without speech: only what was seen or heard."""
        behavior = self.behavior if with_speech or not self.speech else self.behavior.replace(self.speech, "")
        return " ".join(p for p in (self.location, self.environment, " ".join(behavior.split())) if p)

    def seconds(self) -> float | None:
        """Seconds since midnight of `time` (12-hour clock if AM/PM given), or None if unreadable."""
        m = _CLOCK.search(self.time)
        if not m:
            return None
        h, mnt, s = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
        half = (m.group(4) or "").lower()
        if half == "p" and h < 12:
            h += 12
        if half == "a" and h == 12:
            h = 0
        return float(h * 3600 + mnt * 60 + s)


def _normalise(text: str) -> list[str]:
    text = text.replace("【", "[").replace("】", "]").replace("\r\n", "\n")
    text = re.sub(r"\[\s*LOG\s+(START|END)\s*\]", "\n", text, flags=re.IGNORECASE)
    text = text.replace("**", "").replace("__", "")
    lines = []
    for line in text.split("\n"):
        line = line.strip().lstrip("#").strip()
        if re.fullmatch(r"[-=*_]{3,}", line):
            line = ""
        lines.append(line)
    return lines


def _fields(lines: list[str]) -> list[list[str]]:
    """Flat [field, text] pairs in order of appearance."""
    out: list[list[str]] = []
    prose_after_heading = False
    for line in lines:
        if not line or _NUMBERING.match(line):
            continue
        m = _TAG.match(line)
        if m:
            name = (m.group("b") or m.group("p")).strip().lower()
            kind = _TAG_NAMES.get(name)
            if kind is not None:
                out.append([kind, m.group("rest").strip()])
                prose_after_heading = False
                continue
        h = _HEADING.match(line)
        awaiting_time = bool(out) and out[-1][0] == "time" and not out[-1][1]
        if h and not awaiting_time:
            out.append(["time", h.group("t").strip()])
            if h.group("loc"):
                out.append(["location", h.group("loc").strip()])
            prose_after_heading = True
            continue
        if prose_after_heading:
            out.append(["behavior", line])
            prose_after_heading = False
        elif out:
            out[-1][1] = (out[-1][1] + " " + line).strip()
        else:
            out.append(["behavior", line])
    return out


def parse_log(text: str) -> list[Segment]:
    """Split a log into segments; raises ValueError if `text` is not a string or holds no observation."""
    if not isinstance(text, str):
        raise ValueError(f"a log must be a string, got {type(text).__name__}")
    segments: list[Segment] = []
    current: Segment | None = None
    for kind, value in _fields(_normalise(text)):
        starts_new = current is None or (kind == "time" and any(getattr(current, f) for f in FIELDS)) \
            or (kind != "time" and getattr(current, kind))
        if starts_new:
            current = Segment()
            segments.append(current)
        setattr(current, kind, value)
    segments = [s for s in segments if s.text()]
    if not segments:
        raise ValueError("the log holds no observations")
    return segments


def render_log(segments: list[Segment]) -> str:
    """Write segments in PaSBench's canonical `[Time] [Location] ...` layout."""
    lines = ["[LOG START]"]
    for s in segments:
        lines += [f"[Time] {s.time}", f"[Location] {s.location}",
                  f"[Environmental Observation] {s.environment}", f"[Behavioral Observation] {s.behavior}"]
    lines.append("[LOG END]")
    return "\n".join(lines)
