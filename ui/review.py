"""The dashboard's review feed: a card for every alert, fired watch, line crossing, loiter and notable sound
(`pipelines.sinks.review`, kept in the store), newest first, with its thumbnail, wall-clock and stream time,
what fired and why, and how often it fired again within the cool-down. Filters: kind, camera, reviewed or not.

"Play" cuts the recording (a live stream) from a few seconds before the card's time, or opens the analysed file
there, and plays it at once (autoplay needs the player muted in Chromium); "Mark reviewed" moves the card to
the reviewed ones. The panel is a fragment that refreshes every 2 s while a stream runs, so new cards come in;
its widgets are keyed by the card's id, so a refresh never resets them, and the player sits at a fixed place
above the cards, so a refresh never restarts a playing clip.
"""

from __future__ import annotations

import time

import streamlit as st

from app.services.streams import StreamManager
from pipelines.sinks.store import Store
from ui import backend
from ui.data import fmt_time
from ui.picture import data_url
from ui.playback import play_clip

PAGE = 10
KIND_NAMES = {"all": "all", "alert": "alert", "watch": "watch", "crossing": "line crossing", "loiter": "loiter",
              "event": "sound of note"}
STATES = {"not reviewed": False, "reviewed": True, "all": None}
ALL_CAMERAS = "all cameras"


def clock(wall: float) -> str:
    """Wall-clock time HH:MM:SS (the dashboard machine's zone)."""
    return time.strftime("%H:%M:%S", time.localtime(wall))


def card_lines(card: dict) -> tuple[str, str]:
    """The card's heading (what fired, its kind and severity) and its times: wall clock, stream time, repeats."""
    severity = f" · {card['severity']}" if card.get("severity") else ""
    head = f"**{card['title']}** · {KIND_NAMES.get(card['kind'], card['kind'])}{severity}"
    times = f"{clock(card['wall_time'])} · stream {fmt_time(card['time'])} · {card['source']}"
    if card["count"] > 1:
        times += (f" · fired {card['count']}×, last at {fmt_time(card['last_time'])} "
                  f"({clock(card['last_wall'])})")
    return head, times


def playable(store: Store, card: dict) -> tuple | None:
    """What Play shows for a card: `("clip", Clip, start, t)` from a live job's recording, `("file", path, start,
    t)` for an analysed file the dashboard kept, or None; `t` is the firing it plays from 3 s before: on a live
    job the newest (the card says when it last fired), else the first when the recording cannot cut the newest."""
    if backend.has_recording(store, card["job_id"]):
        for t in dict.fromkeys((float(card["last_time"]), float(card["time"]))):
            clip = backend.recorded_clip(store, card["job_id"], t, backend.LEAD_S)
            if clip is not None:
                return "clip", clip, int(round(clip.offset(max(0.0, t - backend.LEAD_S)))), t
        return None
    media = backend.media_for(store, card["job_id"])
    t = float(card["time"])
    return None if media is None else ("file", str(media), int(max(0.0, t - backend.LEAD_S)), t)


def _player(player, playing: tuple | None) -> None:
    if playing is None:
        return
    card, what = playing
    if what is None:
        player.warning(f"{card['title']} at {fmt_time(card['time'])}: nothing to play (not recorded, older than the "
                       "retention keeps, or a source the dashboard did not keep)")
        return
    kind, media, start, t = what
    play_clip(player, media.data if kind == "clip" else media, start, f"the review card {card['title']} at {fmt_time(t)}")
    player.caption(f"{card['title']} ({KIND_NAMES.get(card['kind'], card['kind'])}): playing "
                   f"{'its recording' if kind == 'clip' else 'the file'} from {fmt_time(max(0.0, t - backend.LEAD_S))}, "
                   f"{backend.LEAD_S:.0f} s before {'its last firing at ' if t != card['time'] else ''}{fmt_time(t)}")


def _play(store: Store, card: dict) -> None:
    st.session_state.review_playing = (card, playable(store, card))


def card_view(store: Store, card: dict) -> None:
    """One card; its buttons act in callbacks, before the (fragment's) rerun reads the cards again."""
    with st.container(border=True, key=f"review_card_{card['id']}"):
        pic, text, buttons = st.columns([2, 5, 2], vertical_alignment="center")
        thumb = store.card_thumbnail(card["id"]) if card["has_thumbnail"] else None
        if thumb:
            pic.image(data_url(thumb), width=160)
        else:
            pic.caption("no picture")
        head, times = card_lines(card)
        text.markdown(f"{head}  \n{times}  \n{card['why']}")
        buttons.button("Play", key=f"review_play_{card['id']}", type="primary", on_click=_play, args=(store, card))
        buttons.button("Mark unreviewed" if card["reviewed"] else "Mark reviewed", key=f"review_mark_{card['id']}",
                       on_click=store.set_reviewed, args=(card["id"], not card["reviewed"]))


def _turn(step: int) -> None:
    st.session_state.review_page += step


def review_panel(store: Store, manager: StreamManager) -> None:
    """The review feed under the streams; refreshes every 2 s while a stream is not finished."""
    state = st.session_state
    state.setdefault("review_page", 0)
    state.setdefault("review_playing", None)
    active = manager.unfinished() > 0

    @st.fragment(run_every=2.0 if active else None)
    def panel() -> None:
        st.subheader("Review")
        player = st.container(key="review_player")  # at a fixed place: a refresh never remounts a playing clip
        if not store.count_cards():
            st.caption("Nothing to review yet: alerts, fired watches, line crossings, loiters and alarming sounds "
                       "come here as cards.")
            return
        kind_col, camera_col, state_col = st.columns([5, 3, 3])
        kind = kind_col.radio("Kind", list(KIND_NAMES), format_func=KIND_NAMES.get, horizontal=True,
                              key="review_kind")
        camera = camera_col.selectbox("Camera", [ALL_CAMERAS, *store.review_sources()], key="review_camera")
        shown = state_col.radio("State", list(STATES), horizontal=True, key="review_state")
        filters = {"kind": None if kind == "all" else kind, "source": None if camera == ALL_CAMERAS else camera,
                   "reviewed": STATES[shown]}
        total = store.count_cards(**filters)
        pages = max(1, -(-total // PAGE))
        state.review_page = min(state.review_page, pages - 1)
        cards = store.review_cards(**filters, limit=PAGE, offset=state.review_page * PAGE)
        if not cards:
            st.caption("no cards match these filters")
        for card in cards:
            card_view(store, card)
        if pages > 1:
            newer, where, older = st.columns([1, 3, 1], vertical_alignment="center")
            newer.button("Newer", key="review_newer", disabled=state.review_page == 0, on_click=_turn, args=(-1,))
            where.caption(f"cards {state.review_page * PAGE + 1}-{state.review_page * PAGE + len(cards)} of {total}")
            older.button("Older", key="review_older", disabled=state.review_page >= pages - 1, on_click=_turn,
                         args=(1,))
        _player(player, state.review_playing)

    panel()
