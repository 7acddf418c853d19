"""Recordings by the clock: for each camera (a live job with a recording) a scrubber over its recording in
local wall-clock time (the recorded span as a bar, with the job's events, alerts and fired watches on it),
what the retention has deleted, said in words, and a jump to a time (HH:MM:SS) that plays the recording from
there.

The wall clock is the recorder's own (`recording.json`: the time each kept segment started, so an outage
shows as a gap); a recording without that log falls back to the job's start plus the stream time, marked "≈".
The shaping functions take no Streamlit, so they are tested on their own.
"""

from __future__ import annotations

import datetime as dt

import altair as alt
import pandas as pd
import streamlit as st

from app.services.recordings import RecordedSpan, Retention
from pipelines.sinks.store import Store
from ui import backend
from ui.data import fmt_time
from ui.hits import LIVE_KINDS, clock
from ui.playback import play_clip
from ui.timeline import human_label

LANES = ["recording", "events", "alerts", "watches"]
COLORS = {"recorded": "#4c78a8", "deleted": "#bbbbbb", "event": "#2ca02c", "alert": "#d62728", "watch": "#ff7f0e"}
GAP_S = 2.0  # segments further apart by the clock than by stream time: the camera was away in between
PLAY_S = 30.0  # how much a jump plays
REFRESH_S = 5.0  # how often the panel is redrawn while a stream runs


def retention_note(span: RecordedSpan, retention: Retention, today: dt.date | None = None) -> str:
    """What the recording holds and what the retention deleted, e.g. "recorded 12:01:05-12:31:05; 14 min
    older than the retention (60 min / 2 GB) were deleted (210 segments)"."""
    held = f"recorded {clock(span.wall(span.start), today)}-{clock(span.wall(span.end), today)}"
    held = ("≈" if span.approximate else "") + held + f" ({fmt_time(span.end - span.start)})"
    limits = f"{retention.minutes:g} min / {retention.gb:g} GB"
    if not span.deleted:
        return f"{held}; nothing deleted yet (the retention keeps {limits})"
    lost = span.deleted_span[1] - span.deleted_span[0] if span.deleted_span else 0.0
    amount = f"{lost / 60:.0f} min" if lost >= 60 else f"{lost:.0f} s"
    return (f"{held}; {amount} older than the retention ({limits}) were deleted "
            f"({span.deleted} segment{'s' * (span.deleted != 1)})")


def recorded_runs(span: RecordedSpan) -> list[tuple[float, float]]:
    """The recorded stretches by the clock (epoch s): one per run of segments without an outage between."""
    starts = [t for t, _ in span.anchors if span.start - 1e-6 <= t <= span.end] or [span.start]
    runs, first = [], starts[0]
    for prev, nxt in zip(starts, starts[1:], strict=False):
        if span.wall(nxt) - span.wall(prev) > nxt - prev + GAP_S:
            runs.append((span.wall(first), span.wall(prev) + (nxt - prev)))
            first = nxt
    runs.append((span.wall(first), span.wall(span.end)))
    return runs


def scrubber_frame(span: RecordedSpan, events: list[dict], alerts: list[dict], moments: list[dict]) -> pd.DataFrame:
    """One row per bar of the scrubber: `lane`, `kind`, `name`, `start`/`end` as local datetimes, `when`
    (HH:MM:SS) and `stream` (mm:ss); events, alerts and watches outside the kept recording are kept (they
    show what the retention deleted)."""
    def at(epoch: float) -> dt.datetime:
        return dt.datetime.fromtimestamp(epoch)

    def row(lane: str, kind: str, name: str, w0: float, w1: float, t: float) -> dict:
        return {"lane": lane, "kind": kind, "name": name, "start": at(w0), "end": at(max(w1, w0 + min_w)),
                "when": f"{clock(w0)}-{clock(w1)}", "stream": fmt_time(t)}

    min_w = max(span.end - span.start, 60.0) / 200  # short events stay visible
    rows = [row("recording", "recorded", "recorded", w0, w1, span.stream(w0)) for w0, w1 in recorded_runs(span)]
    if span.deleted_span:
        d0, d1 = span.deleted_span
        rows.append(row("recording", "deleted", f"deleted by the retention ({span.deleted} segments)",
                        span.wall(d0), span.wall(d1), d0))
    rows += [row("events", "event", e.get("name") or human_label(e.get("label", "?")), span.wall(e["start"]),
                 span.wall(e["end"]), e["start"]) for e in events]
    rows += [row("alerts", "alert", f"{a.get('severity', '')} {a.get('rule', '')}".strip() or "alert",
                 span.wall(a["time"]), span.wall(a["time"]), a["time"]) for a in alerts]
    rows += [row("watches", "watch", str(m.get("query", "?")), span.wall(m["start"]), span.wall(m["end"]),
                 m["start"]) for m in moments]
    return pd.DataFrame(rows, columns=["lane", "kind", "name", "start", "end", "when", "stream"])


def scrubber_chart(frame: pd.DataFrame, marker: dt.datetime | None = None) -> alt.LayerChart | alt.Chart:
    """The lanes on one local wall-clock axis (HH:MM:SS), and a rule at `marker` (where a jump plays from)."""
    bars = alt.Chart(frame).mark_bar(cornerRadius=2, height=14).encode(
        x=alt.X("start:T", title="local time", axis=alt.Axis(format="%H:%M:%S", tickCount=8, grid=True)),
        x2="end:T", y=alt.Y("lane:N", sort=LANES, scale=alt.Scale(domain=LANES), title=None),
        color=alt.Color("kind:N", scale=alt.Scale(domain=list(COLORS), range=list(COLORS.values())),
                        legend=alt.Legend(orient="bottom", title=None)),
        tooltip=[alt.Tooltip("name:N"), alt.Tooltip("when:N", title="time"), alt.Tooltip("stream:N",
                                                                                        title="stream time")],
    ).properties(height=alt.Step(24))
    if marker is None:
        return bars
    rule = alt.Chart(pd.DataFrame({"at": [marker]})).mark_rule(color="black", strokeWidth=2).encode(x="at:T")
    return alt.layer(bars, rule)


def wall_at(text: str, span: RecordedSpan) -> float:
    """The wall-clock time (epoch s) that `text` ("HH:MM:SS" or "HH:MM", local) names within the recording, on
    whichever of its days holds it; ValueError saying the recorded span otherwise."""
    try:
        of_day = dt.time.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not a time of day (HH:MM:SS)") from None
    first, last = span.wall(span.start), span.wall(span.end)
    days = {dt.datetime.fromtimestamp(first).date(), dt.datetime.fromtimestamp(last).date()}
    for day in sorted(days):
        epoch = dt.datetime.combine(day, of_day).timestamp()
        if first - 1.0 <= epoch <= last:
            return epoch
    raise ValueError(f"{text.strip()} is not in the recording ({clock(first)}-{clock(last)})")


def cameras(store: Store, limit: int = 200) -> list[dict]:
    """The live jobs, newest first, whose recording still holds segments."""
    return [j for j in store.recent_jobs(limit) if j["kind"] in LIVE_KINDS and backend.has_recording(store, j["id"])]


def recordings_panel(store: Store, live: bool = False) -> None:
    """An expander with each camera's recording: what is kept and deleted, the scrubber, and a jump to a time;
    redrawn every REFRESH_S while a stream is `live` (its recording grows, and the first segment is written only
    seconds after the stream starts)."""
    st.fragment(run_every=REFRESH_S if live else None)(_recordings)(store)


def _recordings(store: Store) -> None:
    with st.expander("Recordings by the clock", expanded=False):
        jobs = cameras(store)
        if not jobs:
            st.write("no recordings (live streams are recorded while they run)")
            return
        retention = backend.retention()
        spans = {j["id"]: backend.recording_span(store, j["id"]) for j in jobs}
        by_id = {j["id"]: j for j in jobs if spans[j["id"]] is not None}
        if not by_id:
            st.write("no recordings")
            return
        for job_id, job in by_id.items():
            st.caption(f"**{job['source']}** (job `{job_id}`, {job['status']}): {retention_note(spans[job_id], retention)}")
        chosen = st.selectbox("Camera", list(by_id), key="rec_job",
                              format_func=lambda i: f"{by_id[i]['source']} · {clock(by_id[i]['created_at'])} · "
                                                    f"{by_id[i]['status']}")
        scrubber(store, chosen, spans[chosen])


def scrubber(store: Store, job_id: str, span: RecordedSpan) -> None:
    """The chart of one recording and its jump-to-time player."""
    playing = st.session_state.setdefault("rec_playing", {})
    text = st.text_input("Jump to (HH:MM:SS)", key=f"rec_jump_{job_id}", placeholder=clock(span.wall(span.start)),
                         help="a local time within the recording; Play plays the recording from there")
    go = st.button("Play from there", key=f"rec_play_{job_id}", disabled=not text.strip())
    marker = None
    if go:
        try:
            epoch = wall_at(text, span)
        except ValueError as exc:
            playing[job_id] = str(exc)
        else:
            t = span.stream(epoch)
            playing[job_id] = (epoch, t, backend.recorded_clip(store, job_id, t, 0.0, PLAY_S))
    shown = playing.get(job_id)
    if isinstance(shown, tuple):
        marker = dt.datetime.fromtimestamp(shown[0])
    frame = scrubber_frame(span, store.rows("events", job_id), store.rows("alerts", job_id),
                           store.rows("moments", job_id))
    st.altair_chart(scrubber_chart(frame, marker), width="stretch")
    if isinstance(shown, str):
        st.warning(shown)
    elif shown is not None:
        epoch, t, clip = shown
        if clip is None:
            st.warning(f"{clock(epoch)} is not in the recording (not recorded, or older than the retention keeps)")
            return
        play_clip(st, clip.data, int(round(clip.offset(t))), f"the recording from {clock(epoch)}")
        st.caption(f"playing the recording from {clock(epoch)} (stream time {fmt_time(t)})")
