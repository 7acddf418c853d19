"""Live sources in the dashboard, in headless Chromium: a failed stream says why, with a hint; then one live
loopback RTSP stream started without watches, shared by the scenarios in file order (its models load once): the
live picture, a watch added on the running stream that fires, the fired watch played back from the recording
(the player's frames are the recording's, from a few seconds before the moment), the fired watch's review card
(thumbnail, kind filter, Mark reviewed, Play autoplaying its recording), and a reload that finds the stream,
whose Stop from the new tab saves it as stopped and ends its Ray actors."""

from __future__ import annotations

import io
import re
import time

import av
import httpx
import numpy as np
import psutil
import pytest
from PIL import Image

from pipelines.media.recorder import OFFSET_S, list_segments, segment_start
from pipelines.sinks.store import Store
from tests.helpers.cli import free_port
from tests.helpers.dashboard import (
    VIDEO_SRCS,
    browser,
    check_png,
    click,
    click_until,
    dashboard_server,
    expander_text,
    has_text,
    keep_screenshot,
    pipeline_actors,
    playing_video,
    start_stream,
)
from training.media.loopback import RtspServer


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory):
    db = tmp_path_factory.mktemp("dash") / "dash.db"
    with dashboard_server(db) as (url, proc):
        yield url, proc, db


@pytest.mark.slow
def test_failed_stream_says_why_with_a_hint(dashboard, tmp_path):
    url, _, db = dashboard
    source = f"rtsp://127.0.0.1:{free_port()}/cam"  # nothing listens there
    with browser(tmp_path / "profile") as b:
        start_stream(b, url, source, "tcp", watch="a door slams")
        b.wait_for(has_text("watching for: a door slams") + " && " + has_text("connection refused") + " && " + has_text("Try this: nothing listens"), 90,
                   "the failure and its hint")
        text = b.js("document.body.innerText")
        shot = tmp_path / "failed.png"
        b.screenshot(shot)
        click_until(b, "Dismiss", "!" + has_text("connection refused"), "the failed stream to go")
    assert "127.0.0.1" in text and "failed" in text
    check_png(shot)
    keep_screenshot(shot, "dashboard-failed-stream.png")
    store = Store(db)
    job = next(j for j in store.recent_jobs() if j["kind"] == "dashboard-live")
    assert job["status"] == "failed" and "connection refused" in job["error"]


@pytest.fixture(scope="module")
def live(dashboard, demo_clip, tmp_path_factory):
    """One browser on one live loopback RTSP stream, for the scenarios below."""
    url, proc, db = dashboard
    server = RtspServer(demo_clip[0])
    server.start()
    try:
        with browser(tmp_path_factory.mktemp("live") / "profile") as b:
            start_stream(b, url, server.url, "udp")
            b.wait_for(has_text("watching rtsp:") + " && " + has_text("Stream health"), 240, "the live view")
            yield b, url, proc, db
    finally:
        server.kill()


def page_text(b) -> str:
    return b.js("document.body.innerText")


@pytest.mark.slow
def test_live_picture_with_boxes_refreshes(live):
    b = live[0]
    b.wait_for("[...document.querySelectorAll('[data-testid=stImage] img')].some(i => i.naturalWidth === 640 && "
               "i.naturalHeight === 360) && " + has_text("with its own boxes"), 60, "the live picture")
    first_picture = b.js("document.querySelector('[data-testid=stImage] img').src")
    b.wait_for(f"document.querySelector('[data-testid=stImage] img').src !== {first_picture!r}", 30,
               "a newer picture")
    b.call("Emulation.setDeviceMetricsOverride", width=420, height=900, deviceScaleFactor=1, mobile=True)
    try:  # on a phone the picture fits the screen instead of running off it
        b.wait_for("(r => r.width > 300 && r.right <= 420)(document.querySelector('[data-testid=stImage] img')"
                   ".getBoundingClientRect())", 30, "the picture within a 420-px screen")
    finally:
        b.call("Emulation.clearDeviceMetricsOverride")


WATCH_BOX = "textarea[placeholder='an alarm goes off']"


def add_watch(b, watch: str = "a telephone is ringing") -> None:
    """Add `watch` to the running stream's watches in its editor."""
    b.wait_for(f"document.querySelector({WATCH_BOX!r}) !== null", 30, "the watch editor")
    b.js(f"(() => {{ const e = document.querySelector({WATCH_BOX!r}); e.focus(); "
         "e.setSelectionRange(e.value.length, e.value.length); })()")
    b.call("Input.insertText", text=watch)
    b.js("document.activeElement.blur()")
    time.sleep(1)
    b.wait_for(click("Update watches"), 30, "the Update watches button")
    b.wait_for(has_text(f"watching for: {watch}"), 30, "the new watch listed")


@pytest.mark.slow
def test_a_watch_added_on_the_running_stream_fires(live, tmp_path):
    b = live[0]
    add_watch(b)
    try:  # the demo loop (22 s) rings at 10 s; a new watch is checked every 5 s over the last 30 s
        b.wait_for(has_text("Watches that fired") + " && " + has_text("a telephone is ringing:"), 240,
                   "the new watch to fire")
    except TimeoutError:
        raise AssertionError(page_text(b)) from None
    text = page_text(b)
    shot = tmp_path / "watch.png"
    b.screenshot(shot)
    assert re.search(r"a telephone is ringing: \d\d:\d\d-\d\d:\d\d \(score", text), text
    check_png(shot)
    keep_screenshot(shot, "dashboard-watch-added.png")


# the play button of a fired watch, or of the telephone event, at least 5 s into the stream (so the recording
# reaches 3 s before it); the watch fires near its threshold, the event with every ring of the loop
MOMENT = r"(?:a telephone is ringing \(watch\)|Telephone bell ringing \(event\))"
PLAY_WATCH = ("(() => { const b = [...document.querySelectorAll('button')].find(x => { "
              f"const m = x.innerText.match(/(\\d+):(\\d\\d) {MOMENT}/); "
              "return m && +m[1] * 60 + +m[2] >= 5; }); if (b) { b.click(); return true; } return false; })()")
VIDEO = "document.querySelector('[data-testid=stVideo]')"


def recorded_keyframes(folder, lo: float, hi: float) -> list[tuple[float, np.ndarray]]:
    """The recording's keyframes (stream time, RGB) between stream times `lo` and `hi`, decoded from its files."""
    out = []
    for path in [p for p in list_segments(folder) if lo - 10 <= segment_start(p) <= hi]:
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            stream.codec_context.skip_frame = "NONKEY"
            for frame in container.decode(stream):
                t = float(frame.time) - OFFSET_S
                if lo <= t <= hi:
                    out.append((t, frame.to_ndarray(format="rgb24")))
    return out


@pytest.mark.slow
def test_a_fired_watch_plays_back_from_the_recording(live, tmp_path):
    b, url, _, db = live
    b.wait_for(PLAY_WATCH, 240, "the play button of a telephone watch or event after 00:05")
    b.wait_for(f"{VIDEO} !== null && {VIDEO}.readyState >= 1 && " + has_text("from the recording ("), 60,
               "the player with the recording")
    time.sleep(1)
    # where the player started (it plays at once: its current time has moved on since)
    src, position = b.js(f"[{VIDEO}.src, {VIDEO}.played.length ? {VIDEO}.played.start(0) : {VIDEO}.currentTime]")
    text = page_text(b)
    shot = tmp_path / "playback.png"
    b.screenshot(shot)
    b.js("[...document.querySelectorAll('h3')].find(h => h.innerText.trim() === 'Alerts').scrollIntoView()")
    time.sleep(0.5)
    alerts_shot = tmp_path / "alerts.png"  # the alerts (when the safety monitor raised one) and the play buttons
    b.screenshot(alerts_shot)
    moment = float(re.search(r"before " + MOMENT + r" at \d\d:\d\d \(([0-9.]+) s\)", text)[1])
    clip = httpx.get(src if src.startswith("http") else url + src, timeout=30).content
    with av.open(io.BytesIO(clip)) as container:
        first = next(container.decode(video=0)).to_ndarray(format="rgb24")
    job = next(j for j in Store(db).recent_jobs() if j["kind"] == "dashboard-live" and j["status"] == "running")
    # the clip starts on a keyframe of this stream's recording, found by its picture: that gives its stream time
    frames = recorded_keyframes(db.parent / "recordings" / job["id"], moment - 10.0, moment)
    diffs = [np.abs(rgb.astype(int) - first.astype(int)).mean() for _, rgb in frames]
    assert frames and min(diffs) < 1.0, diffs
    origin = frames[int(np.argmin(diffs))][0]
    assert 2.0 <= moment - (origin + position) <= 4.0, (moment, origin, position)
    check_png(shot)
    keep_screenshot(shot, "dashboard-playback.png")
    check_png(alerts_shot)
    if "no alerts" not in text:
        keep_screenshot(alerts_shot, "dashboard-live-alerts.png")


# the review feed's card of the telephone watch (its repeats every loop merge into it), with its thumbnail shown
# (160 px wide: Streamlit scales the 320-px picture down): its id, or null
WATCH_CARD = ("(() => { const c = [...document.querySelectorAll('[class*=st-key-review_card_]')].find(c => "
              "c.innerText.includes('a telephone is ringing · watch') && "
              "[...c.querySelectorAll('img')].some(i => i.complete && i.naturalWidth >= 160)); "
              "return c ? +c.className.match(/st-key-review_card_(\\d+)/)[1] : null; })()")
REVIEW_VIDEO = "document.querySelector('.st-key-review_player video')"


def pick(b, key: str, option: str) -> None:
    """Choose `option` of the review panel's radio `key`."""
    b.wait_for(f"(() => {{ const l = [...document.querySelectorAll('.st-key-{key} label')].find(x => "
               f"x.innerText.trim() === {option!r}); if (l) {{ l.click(); return true; }} return false; }})()", 30,
               f"the {option!r} choice of {key}")


def card_button(card: int, label: str) -> str:
    return click(label, f".st-key-review_card_{card} button")


@pytest.mark.slow
def test_a_fired_watch_becomes_a_review_card_that_filters_marks_and_plays(live, tmp_path):
    b, _, _, db = live
    if "watching for: a telephone is ringing" not in page_text(b):  # run alone: the watch of the test above
        add_watch(b)
    try:  # the filters come with the first card
        b.wait_for("document.querySelector('.st-key-review_kind') !== null", 240, "the review feed's filters")
        pick(b, "review_kind", "watch")
        b.wait_for(WATCH_CARD, 240, "the watch's review card with its thumbnail")
    except TimeoutError:
        raise AssertionError(page_text(b)) from None
    card = b.js(WATCH_CARD)
    shown = f"document.querySelector('.st-key-review_card_{card}') !== null"
    text = b.js(f"document.querySelector('.st-key-review_card_{card}').innerText")
    assert re.search(r"\d\d:\d\d:\d\d · stream \d\d:\d\d · rtsp://", text), text  # wall clock, stream time
    assert "the last seconds matched it at" in text and "(score" in text, text
    stored = Store(db).review_card(card)
    assert stored["kind"] == "watch" and stored["has_thumbnail"] and not stored["reviewed"]
    assert Image.open(io.BytesIO(Store(db).card_thumbnail(card))).size == (320, 180)  # the 640x360 picture, halved
    # the next loop's ring fires it again: that merges into this card (Play plays the latest firing)
    b.wait_for(f"document.querySelector('.st-key-review_card_{card}').innerText.match(/fired \\d+×/)", 120,
               "the repeat merged into the card")
    assert Store(db).count_cards(kind="watch", reviewed=False) == 1

    pick(b, "review_kind", "alert")  # another kind hides it, its own shows it
    b.wait_for("!(" + shown + ")", 30, "the watch card hidden by the kind filter")
    pick(b, "review_kind", "watch")
    b.wait_for(shown, 30, "the watch card shown again")

    b.wait_for(card_button(card, "Mark reviewed"), 30, "its Mark reviewed button")
    b.wait_for("!(" + shown + ")", 30, "the reviewed card gone from the cards not reviewed")
    assert Store(db).review_card(card)["reviewed"]
    pick(b, "review_state", "reviewed")
    b.wait_for(shown + " && " + card_button(card, "Play"), 30, "the card among the reviewed ones, and Play")
    b.wait_for(f"{REVIEW_VIDEO} !== null && {REVIEW_VIDEO}.readyState >= 2", 60, "the review player with the clip")
    b.js("document.querySelector('.st-key-review_player').scrollIntoView()")
    start = b.js(f"{REVIEW_VIDEO}.currentTime")
    # kept in view while it is awaited: Chromium starts a muted autoplay only in view, and the live panels' reruns
    # move it (as `playing_video` does)
    look = "(document.querySelector('.st-key-review_player')?.scrollIntoView({block: 'center'}), true)"
    try:  # it plays by itself (nothing clicks the player): not paused, and its time moves on (the panel's 2-s
        # refresh does not remount it)
        b.wait_for(f"{look} && !{REVIEW_VIDEO}.paused && {REVIEW_VIDEO}.currentTime > {start} + 1.5", 60,
                   "the clip playing")
    except TimeoutError:
        raise AssertionError(b.js(f"[{REVIEW_VIDEO}.paused, {REVIEW_VIDEO}.muted, {REVIEW_VIDEO}.currentTime, "
                                  f"{REVIEW_VIDEO}.error && {REVIEW_VIDEO}.error.message]")) from None
    assert b.js(has_text("a telephone is ringing (watch): playing its recording from"))
    assert Store(db).review_card(card)["count"] >= 2
    shot = tmp_path / "review.png"
    b.screenshot(shot)
    check_png(shot)
    keep_screenshot(shot, "dashboard-review.png")
    pick(b, "review_state", "not reviewed")


@pytest.mark.slow
def test_reload_finds_the_live_stream_and_stop_ends_its_processes(live, tmp_path):
    b, _, proc, db = live
    b.wait_for("[...document.querySelectorAll('[data-testid=stCodeBlock], code')].some(c => "
               "c.innerText.includes('[00:'))", 120, "a transcript line")
    actors = pipeline_actors(proc.pid)
    # the stream's own actor (its reader and sink); the shared stage hosts end a while after the last stream
    assert any("IngestActor" in t for t in actors.values()), actors
    b.js("window.beforeReload = true")
    b.call("Page.reload")  # a new Streamlit session: nothing of the old tab's state is left
    b.wait_for("window.beforeReload === undefined && " + has_text("Streams") + " && " + has_text("watching rtsp:"),
               120, "the stream after the reload")
    # the new tab rebuilds the view from the sink's feed: bars on the timeline, transcript and fired watches
    try:
        b.wait_for("document.querySelectorAll('.vega-embed svg path[aria-roledescription=\"bar\"]').length > 0 && "
                   + has_text("[00:") + " && " + has_text("a telephone is ringing:"), 120, "the rebuilt live view")
    except TimeoutError:
        raise AssertionError(page_text(b)) from None
    time.sleep(1)
    text_after_reload = page_text(b)
    shot = tmp_path / "live.png"
    b.screenshot(shot)
    b.wait_for(click("Stop"), 30, "the Stop button")
    b.wait_for("!" + has_text("watching rtsp:") + " && " + has_text("(job stream-"), 180, "the saved result")
    b.wait_for(has_text(", stopped)"), 30, "the stopped status")
    assert "Stop" in text_after_reload and "Choose a source" not in text_after_reload
    check_png(shot)
    keep_screenshot(shot, "dashboard-live.png")
    deadline = time.time() + 60
    while time.time() < deadline and any(psutil.pid_exists(p) for p in actors):
        time.sleep(1)
    assert not [t for p, t in actors.items() if psutil.pid_exists(p)]
    job = next(j for j in Store(db).recent_jobs() if j["kind"] == "dashboard-live" and j["status"] != "failed")
    assert job["status"] == "stopped"  # stopped by its user, not ended by its source
    assert Store(db).rows("events", job["id"])


QUERY_BOX = "input[placeholder='someone mentions the front door']"
def stored_ring(db) -> bool:
    """Whether the store holds a transcript line or an event of the demo clip's ringing phone."""
    speech, events = Store(db).text_rows()
    return any("ring" in r[2].lower() for r in speech) or any(re.search("Telephone|Ringtone|Bell", r[2])
                                                                for r in events)


def seconds_of_day(hms: str) -> int:
    h, m, s = (int(x) for x in hms.split(":"))
    return h * 3600 + m * 60 + s


@pytest.mark.slow
def test_a_live_search_hit_shows_its_time_and_picture_and_plays_the_recording(live, tmp_path):
    """Search the live stream for what the demo clip says and rings: the hit reads mm:ss-mm:ss and the clock,
    has a thumbnail of its first frame, and its Play plays the stream's recording (muted, at once)."""
    b, _, _, db = live
    deadline = time.time() + 240  # the stream's rows reach the store as it plays (a search runs once per query)
    while not stored_ring(db) and time.time() < deadline:
        time.sleep(1)
    assert stored_ring(db), "no transcript line or event of the ring was stored"
    b.wait_for(f"document.querySelector({QUERY_BOX!r}) !== null", 60, "the search box")
    b.type_into(QUERY_BOX, "the telephone is ringing")
    row = r"/\d\d:\d\d-\d\d:\d\d · rtsp:\/\/\S+ · at \d\d:\d\d:\d\d · score 0\.\d\d/"
    try:
        b.wait_for(f"{row}.test(document.body.innerText) && [...document.querySelectorAll("
                   "'[data-testid=stImage] img')].some(i => i.naturalWidth === 160 && i.naturalHeight === 90)",
                   120, "a live hit with its time and thumbnail")
    except TimeoutError:
        raise AssertionError(page_text(b)) from None
    text = page_text(b)
    assert "17.77" not in text and "no playable copy" not in text
    hits = re.findall(r"\d\d:\d\d-\d\d:\d\d · rtsp://\S+ · at \d\d:\d\d:\d\d", text)
    assert hits and len(hits) == len(set(hits)), hits  # each moment once
    before = b.js(VIDEO_SRCS)
    b.wait_for(click("▶ Play"), 30, "a hit's Play button")
    b.wait_for(has_text("s before the moment"), 60, "the recording's clip")
    playing_video(b, before, "the hit's clip")
    shot = tmp_path / "search.png"
    b.screenshot(shot)
    check_png(shot)
    keep_screenshot(shot, "dashboard-search.png")


@pytest.mark.slow
def test_the_recordings_scrubber_plays_from_a_wall_clock_time(live, tmp_path):
    """The Recordings expander says what the stream's recording holds by the clock and what the retention
    deleted, and a time typed into its jump box plays the recording from there."""
    b = live[0]
    b.wait_for("(() => { const s = [...document.querySelectorAll('summary')].find(x => x.innerText.includes("
               "'Recordings by the clock')); if (s) s.click(); return !!s; })()", 60, "the Recordings expander")
    span = r"recorded (\d\d:\d\d:\d\d)-(\d\d:\d\d:\d\d)"  # the panel is redrawn as the recording grows
    b.wait_for(has_text("nothing deleted yet (the retention keeps 60 min / 2 GB)") + " && (m => !!m && (s => s(m[2]) - "
               f"s(m[1]) >= 6)(t => t.split(':').reduce((a, x) => a * 60 + +x, 0)))(document.body.innerText.match("
               f"/{span}/))", 60, "what the recording holds, 6 s of it")
    first = re.search(span, page_text(b))[1]
    at = f"{(jump := seconds_of_day(first) + 4) // 3600:02d}:{jump // 60 % 60:02d}:{jump % 60:02d}"
    box = "input[aria-label='Jump to (HH:MM:SS)']"
    b.wait_for(f"document.querySelector({box!r}) !== null", 30, "the jump box")
    enabled = click("Play from there").replace("b.click(); ", "")  # true once the typed time has committed
    for attempt in range(3):  # a rerun that lands while typing redraws the box empty: type again
        b.type_into(box, at)
        try:
            b.wait_for(enabled, 20, "the Play button enabled by the typed time")
            break
        except TimeoutError:
            if attempt == 2:
                raise AssertionError(expander_text(b, "Recordings by the clock")) from None
    before = b.js(VIDEO_SRCS)
    try:
        click_until(b, "Play from there", has_text(f"playing the recording from {at} (stream time "), "the jump's clip",
                    wait_s=40)
    except TimeoutError:
        raise AssertionError(expander_text(b, "Recordings by the clock")) from None
    playing_video(b, before, "the jump's clip")
    assert b.js("document.querySelectorAll('.vega-embed svg').length") >= 1  # the scrubber's chart
    b.screenshot(shot := tmp_path / "recordings.png")
    check_png(shot)
    keep_screenshot(shot, "dashboard-recordings.png")
