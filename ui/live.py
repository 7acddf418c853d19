"""Live sources in the dashboard: every stream the process runs (they belong to the server's `StreamManager`,
not to a browser tab), each with Stop, and the live view of the one being watched.

Each tab keeps only what it has read of a stream's feed (`LiveState`, rebuilt from the sink's feed after a
reload); the streams themselves are found again in the shared manager.
"""

from __future__ import annotations

import time

import streamlit as st

from app.services.streams import LiveStream, StreamManager, shown_status
from models.errors import BadInput
from pipelines.sinks.store import Store
from ui.data import LiveState, fmt_time
from ui.panels import failure, show_panels, state_badge
from ui.picture import analysed_picture, data_url
from ui.playback import playback_panel


def _stored_error(store: Store, stream: LiveStream) -> str | None:
    job = store.job(stream.job_id)
    return (job or {}).get("error") or stream.error


def _stop(manager: StreamManager, store: Store, stream: LiveStream) -> None:
    """Stop (or dismiss) a stream, then show what it saved."""
    state = st.session_state
    with st.spinner(f"stopping {stream.source} and saving its result"):
        manager.remove(stream.id, timeout=120)
    state.views.pop(stream.id, None)
    if state.get("viewing") == stream.id:
        state.viewing = None
    result = store.result(stream.job_id)
    if result is not None:
        state.update(result=result, job_id=stream.job_id, error=None)
    st.rerun()


def stream_row(manager: StreamManager, store: Store, stream: LiveStream) -> None:
    name, status, mid, view, stop = st.columns([5, 2, 2, 1, 1], vertical_alignment="center")
    name.markdown(f"**{stream.source}**  \njob `{stream.job_id}`, since "
                  f"{time.strftime('%H:%M:%S', time.localtime(stream.created_at))}")
    stats = manager.health(stream)["stats"] if stream.status == "running" else (stream.final_stats or {})
    with status:
        state_badge(shown_status(stream, stats))
    if stream.status == "running" and st.session_state.get("viewing") != stream.id:
        if view.button("View", key=f"view_{stream.id}"):
            st.session_state.viewing = stream.id
            st.rerun()
    label = "Dismiss" if stream.terminal else "Stop"
    if stop.button(label, key=f"stop_{stream.id}", type="secondary" if stream.terminal else "primary"):
        _stop(manager, store, stream)
    if stream.watches:
        st.caption("watching for: " + "; ".join(stream.watches))
    if stream.status == "failed":
        failure(_stored_error(store, stream), f"{stream.source} failed", stats)
    elif shown_status(stream, stats) == "reconnecting":
        since = stats.get("outage_since")
        st.caption(f"reconnecting{' since ' + time.strftime('%H:%M:%S', time.localtime(since)) if since else ''}: "
                   f"{stats.get('last_error') or 'no data'}")


ZONE_HINT = "door=0.1,0.2 0.45,0.2 0.45,0.95 0.1,0.95"
LINE_HINT = "gate=0.5,0,0.5,1"


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def layout_inputs() -> tuple[list[str], list[str], bool]:
    """The sidebar's tracking options for a new live source: zones and counting lines (the CLI's `--zone` and
    `--line` syntax, 0-1 of the picture), and whether to track without them."""
    with st.sidebar.expander("Tracking, zones and lines"):
        track = st.checkbox("Track objects (ids, counts)", key="track")
        zones = st.text_area("Zones (one per line)", key="zones", placeholder=ZONE_HINT,
                             help="NAME=x,y x,y x,y ... (0-1 of the picture): zone_enter, zone_exit and loiter")
        lines = st.text_area("Counting lines (one per line)", key="lines", placeholder=LINE_HINT,
                             help="NAME=x1,y1,x2,y2 (0-1 of the picture): crossings counted by direction")
    return _lines(zones), _lines(lines), track


def line_counts(health: dict | None) -> dict[str, dict[str, int]]:
    """Crossings of each counting line so far, by direction ("a_to_b" -> count), all labels together: the
    sink's exact counts (`stats["tracking"]`, as /metrics reports them), not what this tab has seen."""
    out: dict[str, dict[str, int]] = {}
    for kind, name, _label, way, n in (health or {}).get("tracking") or []:
        if kind == "crossing":
            by_way = out.setdefault(name, {})
            by_way[way] = by_way.get(way, 0) + int(n)
    return out


def layout_editor(manager: StreamManager, stream: LiveStream) -> None:
    """Change a tracked stream's zones and lines while it runs (from its next second; tracks and counts go on)."""
    with st.expander("Zones and lines on this stream", expanded=False):
        zones = st.text_area("Zones", value="\n".join(stream.zones), key=f"edit_zones_{stream.id}",
                             placeholder=ZONE_HINT, height=68)
        lines = st.text_area("Counting lines", value="\n".join(stream.lines), key=f"edit_lines_{stream.id}",
                             placeholder=LINE_HINT, height=68)
        if st.button("Update zones and lines", key=f"set_layout_{stream.id}"):
            try:
                manager.set_layout(stream.id, _lines(zones), _lines(lines))
            except BadInput as exc:
                st.error(str(exc))


def picture(manager: StreamManager, stream: LiveStream, health: dict | None = None) -> None:
    """The latest analysed key frame with its own boxes, track ids, zones and lines, or why there is none."""
    shot = manager.picture(stream)
    if not shot or not shot.get("jpeg"):
        video = (manager.health(stream)["stats"] or {}).get("frames_decoded")
        st.caption("no picture yet" + ("" if video is None or video else ": the source sends no video"))
        return
    stages = stream.options.stages if stream.options is not None else None
    drawn = analysed_picture(shot, getattr(stages, "zones", ()), getattr(stages, "lines", ()))
    away = (health or {}).get("health") in ("connecting", "reconnecting")
    if away:  # a frozen picture is marked as such: the camera is away, this is the last one it sent
        since = (health or {}).get("outage_since")
        st.warning("STALE: the camera is away" + (f" since {time.strftime('%H:%M:%S', time.localtime(since))}"
                                                  if since else "") + "; this is the last picture it sent")
    st.image(data_url(drawn), width="content",  # its 640 px, or the screen's width on a phone
             caption=f"{'last ' if away else ''}analysed picture of {fmt_time(shot.get('time') or 0.0)}, "
                     "with its own boxes")
    counts = line_counts(health)
    if counts:
        st.caption("counted: " + "; ".join(f"{name} " + ", ".join(f"{n} {way.replace('_', ' ')}"
                                                                  for way, n in sorted(ways.items()))
                                           for name, ways in sorted(counts.items())))


def watch_editor(manager: StreamManager, stream: LiveStream) -> None:
    """Add or remove the running stream's watches (standing queries); they apply from its next second."""
    text = st.text_area("Watches on this stream (one per line)", value="\n".join(stream.watches),
                        key=f"edit_watches_{stream.id}", placeholder="an alarm goes off", height=68,
                        help="checked every 5 s over the last 30 s; add a line to watch for it, remove one to stop")
    if st.button("Update watches", key=f"set_watches_{stream.id}"):
        try:
            manager.set_watches(stream.id, [w.strip() for w in text.splitlines() if w.strip()])
        except BadInput as exc:
            st.error(str(exc))


def live_view(manager: StreamManager, store: Store, stream: LiveStream) -> None:
    views = st.session_state.views
    live = views.setdefault(stream.id, LiveState())
    live.update(manager.feed(stream, live.seq))
    health = manager.health(stream)["stats"]
    st.caption(f"watching {stream.source} at {fmt_time(live.time)}")
    player = st.container()  # at a fixed place, so the view's refresh never remounts a playing clip
    picture(manager, stream, health)
    watch_editor(manager, stream)
    if stream.track:
        layout_editor(manager, stream)
    show_panels(live.events, live.transcript, live.alerts, live.time, health, live)
    if stream.recording is not None:
        playback_panel(store, stream.job_id, live.events, live.alerts, live.moments, player)


def streams_panel(manager: StreamManager, store: Store) -> None:
    """The list of streams and the watched one's live view; refreshes every second while one is not finished."""
    state = st.session_state
    state.setdefault("views", {})
    state.setdefault("viewing", None)
    active = manager.unfinished() > 0

    @st.fragment(run_every=1.0 if active else None)
    def panel() -> None:
        streams = manager.list()
        if not streams:
            return
        if any(not s.terminal for s in streams) != active:
            st.rerun()  # a stream started or finished: refresh the whole page (and whether this fragment ticks)
        st.subheader("Streams")
        running = [s for s in streams if s.status == "running"]
        if state.viewing not in {s.id for s in running}:
            state.viewing = running[0].id if running else None
        for stream in streams:
            stream_row(manager, store, stream)
        watched = manager.get(state.viewing) if state.viewing else None
        if watched is not None and watched.pipeline is not None:
            live_view(manager, store, watched)

    panel()
