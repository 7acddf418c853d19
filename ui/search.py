"""The dashboard's search as a results page: each moment found with its first frame, mm:ss-mm:ss, the time by
the clock, its score and matched text, and a Play button (a live stream's moment plays from its recording, an
upload's from the kept file, a couple of seconds before the moment, muted and at once). Identical hits are
shown once, and the results come ten to a page, up to fifty.

The shaping (dedupe, pages, labels, thumbnails) is `ui.hits`; this module only lays it out. A Play click keeps
its clip in the session, so reruns of the page do not cut the recording again.
"""

from __future__ import annotations

import hashlib

import streamlit as st

from pipelines.sinks.store import Store
from ui import backend
from ui.data import _readable, fmt_time
from ui.hits import MAX_RESULTS, THUMB_PX, dedupe, page_of, page_summary, span_label, thumbnail_of, when_label
from ui.picture import data_url
from ui.playback import play_clip


def hit_key(hit: dict) -> str:
    """A stable key of one hit (its job, source and span), for widget keys and the session's player."""
    text = f"{hit.get('job_id')}|{hit.get('source')}|{hit['start']:.2f}|{hit['end']:.2f}"
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def search_panel(store: Store, job_id: str | None) -> None:
    """The query box, the "only the current clip" filter and the page of results with their players."""
    state = st.session_state
    st.subheader("Search moments")
    query = st.text_input("Query", key="query", placeholder="someone mentions the front door")
    only_this = st.checkbox("only the current clip", value=job_id is not None, key="only_this",
                            disabled=job_id is None)
    if not query.strip():
        return
    found = backend.searcher(store).search(query, top_k=MAX_RESULTS,
                                           job_ids=[job_id] if only_this and job_id else None)
    hits = dedupe(found["moments"])
    state.moments = hits
    st.caption(f"method: {found['method']} (MiniLM similarity over transcripts and event labels)")
    # a new query or a new set of results starts again at the first page
    results = hashlib.sha1("|".join(hit_key(h) for h in hits).encode()).hexdigest()[:12]
    pages = state.setdefault("search_pages", {})
    shown, page, count = page_of(hits, pages.get(results, 0))
    st.caption(page_summary(len(hits), page, count))
    jobs: dict[str, tuple] = {}
    for hit in shown:
        hit_row(store, hit, jobs)
    if count > 1:
        prev, _, nxt = st.columns([1, 4, 1])
        prev.button("◀ Prev", key=f"search_prev_{results}", disabled=page == 0,
                    on_click=pages.__setitem__, args=(results, page - 1))
        nxt.button("Next ▶", key=f"search_next_{results}", disabled=page + 1 >= count,
                   on_click=pages.__setitem__, args=(results, page + 1))


def _job(store: Store, job_id: str | None, jobs: dict[str, tuple]) -> tuple:
    """(job row, recording folder, recording span, kept media) of a hit's job, looked up once per page."""
    if job_id not in jobs:
        job = store.job(job_id) if job_id else None
        folder = backend.recording_folder(store, job_id) if job else None
        span = backend.recording_span(store, job_id) if folder is not None else None
        jobs[job_id] = (job, folder, span, backend.media_for(store, job_id) if folder is None else None)
    return jobs[job_id]


def hit_row(store: Store, hit: dict, jobs: dict[str, tuple]) -> None:
    """One result: thumbnail, times, score and matched text, Play; and its player once Play was clicked."""
    job, folder, span, media = _job(store, hit.get("job_id"), jobs)
    key = hit_key(hit)
    picture, text, action = st.columns([1.3, 6, 1.2], vertical_alignment="center")
    thumb = thumbnail_of(hit, folder, media)
    if thumb is not None:
        picture.image(data_url(thumb), width=THUMB_PX)
    else:
        picture.caption("no picture")
    repeats = f"{hit['repeats']} identical hit{'s' * (hit['repeats'] > 1)} folded in" if hit.get("repeats") else ""
    head = [f"**{span_label(hit)}**", hit.get("source") or "?", when_label(hit, job, span), f"score {hit['score']:.2f}",
            repeats]
    matched = _readable(hit.get("text"))
    text.markdown(" · ".join(p for p in head if p) + (f"  \n{hit.get('kind', '')}: _{matched}_" if matched else ""))
    playable = folder is not None or media is not None
    playing = st.session_state.setdefault("search_playing", {})
    if action.button("▶ Play", key=f"hit_play_{key}", disabled=not playable,
                     help=None if playable else "no copy of this source is kept (API uploads are not stored)"):
        playing.clear()
        playing[key] = _clip(store, hit, folder) if folder is not None else None
    if key in playing:
        _player(hit, folder, media, playing[key])


def _clip(store: Store, hit: dict, folder) -> object:
    """The recording's clip from `backend.LEAD_S` before the hit to a few seconds after its end, or None."""
    return backend.recorded_clip(store, hit["job_id"], float(hit["start"]), backend.LEAD_S,
                                 max(10.0, float(hit["end"]) - float(hit["start"]) + 5.0))


def _player(hit: dict, folder, media, clip) -> None:
    begin = max(0.0, float(hit["start"]) - backend.LEAD_S)
    if folder is None:
        play_clip(st, str(media), int(begin), f"the search hit {span_label(hit)} in the kept file")
        st.caption(f"from the kept file, playing from {fmt_time(begin)} ({hit['start'] - begin:.0f} s before the moment)")
    elif clip is None:
        st.warning(f"{fmt_time(hit['start'])} is not in the recording (not recorded, or older than the retention keeps)")
    else:
        play_clip(st, clip.data, int(round(clip.offset(begin))), f"the search hit {span_label(hit)} in the recording")
        st.caption(f"from the recording ({fmt_time(clip.start)}-{fmt_time(clip.end)} of the stream): playing from "
                   f"{fmt_time(begin)}, {hit['start'] - begin:.0f} s before the moment")
