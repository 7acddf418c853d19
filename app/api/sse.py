"""Server-sent events framing for a stream's feed: one SSE event per detected event, transcript line, alert
and moment, plus a `tick` per analysed second (time, sound tags, visual detections, when an utterance
still being heard began) for a live view."""

from __future__ import annotations

import json


def frame(event: str, data: dict, event_id: int | None = None) -> str:
    """One SSE message; `id` lets a reconnecting client resume with Last-Event-ID."""
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {json.dumps(data, ensure_ascii=False, separators=(',', ':'))}\n\n"


def feed_item_frames(seq: int, item: dict) -> list[str]:
    """The SSE messages for one feed item (one analysed second) of the sink."""
    out = []
    for kind, key in (("event", "events"), ("transcript", "transcript"), ("alert", "alerts"), ("moment", "moments")):
        for row in item.get(key) or []:
            out.append(frame(kind, {"time": item.get("time"), **row}))
    out.append(frame("tick", {"time": item.get("time"), "tags": item.get("tags") or {}, "visual": item.get("visual"),
                              "speaking_since": item.get("speaking_since")}, event_id=seq))
    return out


def comment(text: str = "keep-alive") -> str:
    return f": {text}\n\n"
