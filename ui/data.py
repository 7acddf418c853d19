"""Turns results and live feed items into the tables and charts the dashboard shows (no Streamlit here,
so the shaping is testable on its own)."""

from __future__ import annotations

import pandas as pd

from ui.timeline import human_label, mmss


def rolling_transcript(transcript: list[dict], last_n: int | None = None) -> list[str]:
    """The transcript lines (the last `last_n`, or all) as `[mm:ss] text`, in time order."""
    lines = [f"[{fmt_time(t['start'])}] {t['text']}" for t in sorted(transcript, key=lambda t: t["start"])]
    return lines[-last_n:] if last_n else lines


def alert_lines(alerts: list[dict]) -> list[str]:
    """Each alert as one Markdown line, in time order: mm:ss, severity, rule, the full reason, the lead time and
    the evidence (nothing cut off, unlike a table cell)."""
    lines = []
    for a in sorted(alerts, key=lambda a: a["time"]):
        lead = f" (lead time {a['lead_time_s']:.0f} s)" if a.get("lead_time_s") is not None else ""
        evidence = "; ".join(str(e) for e in a.get("evidence") or [])
        lines.append(f"**{fmt_time(a['time'])}** · {a.get('severity', '?')} · {a.get('rule', '')}: "
                     f"{a.get('reason', '')}{lead}" + (f"  \n_evidence: {evidence}_" if evidence else ""))
    return lines


def answer_lines(moments: list[dict]) -> list[str]:
    """Answers to questions, or watches that fired, as Markdown lines: the query, mm:ss-mm:ss and the score."""
    return [f"**{m.get('query', '?')}**: {fmt_time(m['start'])}-{fmt_time(m['end'])} (score {m['score']:.2f})"
            for m in sorted(moments, key=lambda m: (m.get("query", ""), m["start"]))]


def moments_frame(moments: list[dict]) -> pd.DataFrame:
    """Search hits with their modality weights spread into columns (visual, audio, speech)."""
    rows = []
    for m in moments:
        w = m.get("modality_weights", {})
        rows.append({"source": m.get("source"), "start": m["start"], "end": m["end"], "score": m["score"],
                     "visual": w.get("visual", 0.0), "audio": w.get("audio", 0.0), "speech": w.get("speech", 0.0),
                     "matched": _readable(m.get("text")), "method": m.get("method")})
    return pd.DataFrame(rows, columns=["source", "start", "end", "score", "visual", "audio", "speech", "matched",
                                       "method"])


def _readable(text: str | None) -> str | None:
    """An event label as a person writes it ("Telephone_bell_ringing" -> "Telephone bell ringing"); other
    text as it is."""
    return human_label(text) if text and "_" in text and " " not in text else text


def detections_text(tags: dict[str, float], visual: dict | None, top: int = 8, text: list[dict] | None = None) -> str:
    """One line for the live view: the strongest sound tags, what the visual stage sees and what is written on
    screen this second."""
    sounds = [f"{k} ({v:.2f})" for k, v in sorted(tags.items(), key=lambda kv: -kv[1])[:top]]
    seen = [f"{d['label']} ({d['score']:.2f})" for d in sorted((visual or {}).get("detections") or [],
                                                               key=lambda d: -d.get("score", 0))[:top]]
    if (visual or {}).get("faces"):
        seen.append(f"faces: {visual['faces']}")
    if (visual or {}).get("camera_trouble"):
        seen.append(f"camera: {visual['camera_trouble']}")
    read = [f'"{r["text"]}"' for r in (text or [])[:top]]
    parts = [f"sounds: {', '.join(sounds)}" if sounds else "", f"seen: {', '.join(seen)}" if seen else "",
             f"reads: {', '.join(read)}" if read else ""]
    return " | ".join(p for p in parts if p) or "no detections this second"


def fmt_time(seconds: float) -> str:
    """mm:ss (h:mm:ss past an hour), as on the timeline."""
    return mmss(seconds)


WORDS_WAIT_S = 30.0  # an utterance's placeholder goes after this long without words (Whisper heard none)


class LiveState:
    """What the live view accumulates from the sink's feed: events, transcript, alerts and the latest tags."""

    def __init__(self, max_items: int = 2000):
        self.seq = 0
        self.events: list[dict] = []
        self.transcript: list[dict] = []
        self.alerts: list[dict] = []
        self.moments: list[dict] = []  # standing queries (watches) that fired
        self.tags: dict[str, float] = {}
        self.visual: dict | None = None  # the latest second's detections (objects, persons, faces, pose)
        self.text: list[dict] = []
        self.time = 0.0
        self.max_items = max_items
        self.speaking_since: float | None = None  # an utterance still being heard began here
        self.unheard: list[tuple[float, float]] = []  # utterances that ended, whose words Whisper has not given yet

    def update(self, items: list) -> int:
        """Add feed items `(seq, item)` newer than what we have; returns how many were new."""
        new = 0
        for seq, item in items:
            if seq <= self.seq:
                continue
            self.seq, new = seq, new + 1
            self.events.extend(item.get("events") or [])
            self.transcript.extend(item.get("transcript") or [])
            self.alerts.extend(item.get("alerts") or [])
            self.moments.extend(item.get("moments") or [])
            self.tags = dict(item.get("tags") or {})
            self.visual = item.get("visual")
            self.text = list(item.get("text") or [])  # text read on screen in the latest second
            self.time = float(item.get("time") or self.time)
            since = item.get("speaking_since")
            if self.speaking_since is not None and since != self.speaking_since:  # it ended (or was cut long)
                self.unheard.append((self.speaking_since, self.time))
            self.speaking_since = since
        if new:
            self.unheard = [(a, b) for a, b in self.unheard if self.time - b < WORDS_WAIT_S and not any(
                t["start"] < b + 0.5 and t.get("end", t["start"]) > a - 0.5 for t in self.transcript[-50:])]
        for name in ("events", "transcript", "alerts", "moments"):
            rows = getattr(self, name)
            if len(rows) > self.max_items:
                del rows[: len(rows) - self.max_items]
        return new

    def pending_lines(self) -> list[str]:
        """Placeholders for speech whose words are not in yet (Whisper runs once an utterance ends, so its words
        come seconds later): `[mm:ss] … (speaking)` while it goes on, `… (transcribing)` after."""
        lines = [f"[{fmt_time(a)}] … (transcribing)" for a, _ in sorted(self.unheard)]
        if self.speaking_since is not None and all(abs(a - self.speaking_since) > 0.5 for a, _ in self.unheard):
            lines.append(f"[{fmt_time(self.speaking_since)}] … (speaking)")
        return lines
