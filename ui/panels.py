"""The dashboard's result panels, shared by the live view and finished jobs: health, "now", timeline,
transcript and alerts."""

from __future__ import annotations

import time
from pathlib import Path

import streamlit as st

from ui.data import LiveState, alert_lines, answer_lines, detections_text, rolling_transcript
from ui.hints import failure_hint
from ui.timeline import PICK, mmss, timeline_chart

STATE_COLORS = {"starting": "blue", "connecting": "blue", "running": "green", "live": "green",
                "reconnecting": "orange", "stopped": "gray", "ended": "gray", "done": "gray", "failed": "red",
                "queued": "blue", "unknown": "gray"}


def state_badge(name: str) -> None:
    """A coloured badge for a stream or job state."""
    st.badge(name, color=STATE_COLORS.get(name, "gray"))


def had_data(health: dict | None) -> bool:
    """The source sent data before (what failed is an outage of a source that worked, not its address)."""
    health = health or {}
    return bool(health.get("reconnects") or health.get("segments_emitted") or health.get("health") == "reconnecting")


def failure(reason: str | None, what: str = "failed", health: dict | None = None) -> None:
    """The reason a source failed, in words, and what to try (`health`: its ingest counters, if known)."""
    st.error(f"{what}: {reason or 'no reason was recorded'}")
    hint = failure_hint(reason, had_data(health))
    if hint:
        st.info(f"Try this: {hint}")


def degradation_line(state: dict) -> str:
    """One line on a stream's degradation under its latency budget: now, and seconds at each level so far."""
    now = {"full": "full rate", "frame_rate": f"frame rate lowered to {state.get('fps', 0):g} fps",
           "speech+tags": "visual stage off (speech and sound tags only)"}.get(state.get("level"), state.get("level"))
    seconds = state.get("seconds") or {}
    spent = ", ".join(f"{k} {v} s" for k, v in seconds.items() if v)
    forced = f"; dropped seconds lowered it {state['raised_by_drops']} times" if state.get("raised_by_drops") else ""
    return f"latency budget: {now} now ({spent}; order: {state.get('order', '')}{forced})"


def health_panel(health: dict) -> None:
    """Stream health as a coloured state, one line of counters and the last error with a hint."""
    st.subheader("Stream health")
    state_badge(health.get("health", "unknown"))
    st.caption(f"segments {health.get('segments_emitted', 0)} · frames dropped {health.get('frames_dropped', 0)} · "
               f"reconnects {health.get('reconnects', 0)} · lost {health.get('lost_seconds', 0):g} s")
    degradation = health.get("degradation")
    if degradation:  # under a latency budget: say what was given up to keep up, never degrade silently
        st.caption(degradation_line(degradation))
    if health.get("failure"):
        failure(health["failure"], health=health)
    elif health.get("last_error") and health.get("health") in ("connecting", "reconnecting"):
        since = health.get("outage_since")
        away = f"away since {time.strftime('%H:%M:%S', time.localtime(since))} · " if since else ""
        st.warning(f"{away}last error: {health['last_error']}")
        hint = failure_hint(health["last_error"], had_data(health))
        if hint:
            st.caption(f"Try this: {hint}")


def outage_gaps(health: dict | None, now_s: float | None = None) -> list[tuple[float, float]]:
    """The source's outages on the stream clock: those it came back from (`lost_intervals`, their true length)
    and, while it is away, the one still going on (from `now_s`, the last second analysed, for as long as it
    has been away)."""
    health = health or {}
    gaps = [(float(a), float(b)) for a, b in health.get("lost_intervals") or []]
    since = health.get("outage_since")
    if since and now_s is not None and health.get("health") in ("connecting", "reconnecting"):
        gaps.append((float(now_s), float(now_s) + max(0.0, time.time() - float(since))))
    return gaps


def timeline_panel(events: list[dict], duration: float | None, media: Path | None = None,
                   key: str | None = None, gaps: list | None = None) -> None:
    """The timeline (with the source's outages, `gaps`); with a playable `media` file, a click on an event
    plays it from that second."""
    st.subheader("Timeline")
    gaps = list(gaps or [])
    chart = timeline_chart(events, max([duration or 0.0, *(b for _, b in gaps)]), selectable=media is not None,
                           gaps=gaps)
    if media is None:
        st.altair_chart(chart, width="stretch")
        return
    picked = st.altair_chart(chart, width="stretch", on_select="rerun", selection_mode=PICK, key=key)
    hits = (picked.selection.get(PICK) or []) if picked else []
    if not hits or hits[0].get("start") is None:
        st.caption("click an event to play it")
        return
    hit = hits[0]
    st.caption(f"playing {hit['name']} from {mmss(hit['start'])}")
    st.video(str(media), start_time=int(hit["start"]))


def show_panels(events: list[dict], transcript: list[dict], alerts: list[dict], duration: float | None,
                health: dict | None, live: LiveState | None, media: Path | None = None,
                key: str | None = None, moments: list[dict] | None = None) -> None:
    if health is not None:
        health_panel(health)
    if live is not None:
        st.subheader("Now")
        stale = (health or {}).get("health") in ("connecting", "reconnecting")
        st.write("(no picture: the source is reconnecting)" if stale else detections_text(live.tags, live.visual, text=live.text))
    timeline_panel(events, duration, media, key, gaps=outage_gaps(health, live.time if live is not None else None))
    if health is not None and health.get("lost_intervals"):
        st.caption("source away: " + ", ".join(f"{mmss(a)}-{mmss(b)} ({b - a:.0f} s)"
                                               for a, b in outage_gaps(health)))
    answers = live.moments if live is not None else (moments or [])
    if answers:
        st.subheader("Watches that fired" if live is not None else "Answers")
        for line in answer_lines(answers):
            st.markdown(line)
    left, right = st.columns(2)
    with left:
        st.subheader("Transcript")
        lines = rolling_transcript(transcript, last_n=500 if live is not None else None)
        lines += live.pending_lines() if live is not None else []
        empty = "(no speech yet)" if live is not None else "(no speech in this clip)"
        # a scrolling box: the whole transcript of a file, the last 500 lines of a live source
        st.code("\n".join(lines) if lines else empty, language=None, wrap_lines=True,
                height="content" if len(lines) <= 14 else 320)
    with right:
        st.subheader("Alerts")
        for line in alert_lines(alerts) or ["no alerts"]:
            st.markdown(line)
