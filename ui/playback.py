"""Playback of a live stream's moments from its recording: a button per fired watch, alert and recent event;
a click cuts the recording from a few seconds before that moment (`app.services.recordings`, no re-encoding)
and plays it.

The clip is cut once per click and kept in the session, so the view's refresh every second does not reload the
player; the buttons are keyed by the moment itself, so they survive new events arriving.
"""

from __future__ import annotations

import streamlit as st

from pipelines.sinks.store import Store
from ui import backend
from ui.data import fmt_time
from ui.timeline import human_label

MAX_EVENTS = 6


def play_clip(where, media, start_s: int, alt: str) -> None:
    """Show `media` (an MP4's bytes or a kept file's path) in `where`, playing at once from `start_s`: a click
    means "play it", and browsers autoplay only a muted player (its controls unmute).

    `alt` (what a screen reader says) must name the panel and the moment. Streamlit names a player by its
    arguments, so without it the live view's and the review card's Play of one firing, or a search hit's of the
    same seconds, make two players of one name: the second does not start (Streamlit autoplays a name once while
    it is on the page), and a run that draws both stops the page (StreamlitDuplicateElementId)."""
    where.video(media, start_time=start_s, autoplay=True, muted=True, alt=alt)


def playable(events: list[dict], alerts: list[dict], moments: list[dict]) -> list[tuple[str, float, str]]:
    """(kind, stream time, name) of what can be played: every fired watch and alert, and the latest events,
    newest first. A moment named twice (an audio and an audio-visual Speech event from the same second) is one
    button: both would play the same cut, and a button's key is the moment."""
    items = [("watch", float(m["start"]), str(m.get("query", "?"))) for m in moments]
    items += [("alert", float(a["time"]), str(a.get("rule") or a.get("severity") or "alert")) for a in alerts]
    latest = sorted(events, key=lambda e: -float(e["start"]))
    named = [("event", float(e["start"]), e.get("name") or human_label(e.get("label", "?"))) for e in latest]
    items += list({moment_key(item): item for item in named}.values())[:MAX_EVENTS]  # the latest distinct ones
    unique = {moment_key(item): item for item in items}
    return sorted(unique.values(), key=lambda i: -i[1])


def moment_key(item: tuple[str, float, str]) -> str:
    """What names a playable moment: its kind, time to 10 ms and name (the button's key, with the job's id)."""
    kind, t, name = item
    return f"{kind}_{t:.2f}_{name[:40]}"


def playback_panel(store: Store, job_id: str, events: list[dict], alerts: list[dict], moments: list[dict],
                   player=None) -> None:
    """Buttons that play a moment of job `job_id` from its recording, and the player of the last one clicked (in
    the container `player` when given: a place that stays put while the page refreshes)."""
    items = playable(events, alerts, moments)
    if not items:
        return
    player = player if player is not None else st.container()
    st.subheader("Play back from the recording")
    playing = st.session_state.setdefault("playing", {})
    shown = items[:12]
    for row in range(0, len(shown), 3):  # a row of columns per three: on a phone they stack in time order
        cols = st.columns(3)
        for col, (kind, t, name) in zip(cols, shown[row:row + 3], strict=False):
            label = f"▶ {fmt_time(t)} {name} ({kind})"
            if col.button(label, key=f"play_{job_id}_{moment_key((kind, t, name))}"):
                clip = backend.recorded_clip(store, job_id, t, backend.LEAD_S)
                playing[job_id] = (kind, t, name, clip)
    if job_id not in playing:
        return
    kind, t, name, clip = playing[job_id]
    if clip is None:
        player.warning(f"{fmt_time(t)} is not in the recording (not recorded, or older than the retention keeps)")
        return
    begin = max(0.0, t - backend.LEAD_S)
    play_clip(player, clip.data, int(round(clip.offset(begin))), f"the live view's recording of {name} ({kind}) at "
              f"{fmt_time(t)}")
    player.caption(f"from the recording ({fmt_time(clip.start)}-{fmt_time(clip.end)} of the stream): playing from "
               f"{fmt_time(begin)}, {t - begin:.0f} s before {name} ({kind}) at {fmt_time(t)} ({t:.1f} s)")
