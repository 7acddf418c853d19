"""Live sources in the dashboard, in headless Chromium: streams belong to the dashboard's process, not to a tab
(a reload finds the running stream, and Stop from the new tab ends it and its Ray actors), and a failed
stream says why, with a hint."""

from __future__ import annotations

import time

import psutil
import pytest

from pipelines.sinks.store import Store
from tests.helpers.cli import free_port
from tests.helpers.dashboard import browser, check_png, click, dashboard_server, has_text, keep_screenshot

URL_INPUT = "input[placeholder='rtsp://camera/stream']"


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory):
    db = tmp_path_factory.mktemp("dash") / "dash.db"
    with dashboard_server(db) as (url, proc):
        yield url, proc, db


def start_stream(b, url: str, source: str, transport: str, watch: str = "") -> None:
    b.call("Page.navigate", url=url)
    b.wait_for(click("RTSP / HTTP URL", "label"), 60, "the source radio")
    b.wait_for(f"document.querySelector({URL_INPUT!r}) !== null", 30, "the URL box")
    b.type_into(URL_INPUT, source)
    if watch:  # a text area commits when it loses focus
        b.js("document.querySelector(\"textarea[placeholder='someone falls down']\").focus()")
        b.call("Input.insertText", text=watch)
        b.js("document.activeElement.blur()")
        b.wait_for("document.querySelector(\"textarea[placeholder='someone falls down']\").value === " + repr(watch),
                   10, "the watch")
        time.sleep(1)
    b.wait_for(click(transport, "label"), 30, "the transport")
    b.wait_for(click("Start"), 30, "an enabled Start button")


def pipeline_actors(root_pid: int) -> dict[int, str]:
    """The Ray actor processes of the dashboard's pipelines (ingest, stages, sink) under its process tree."""
    out = {}
    for p in psutil.Process(root_pid).children(recursive=True):
        try:
            title = " ".join(p.cmdline())
        except psutil.Error:
            continue
        if title.startswith("ray::") and any(k in title for k in ("IngestActor", "StageActor", "SinkActor")):
            out[p.pid] = title
    return out


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
        b.wait_for(click("Dismiss"), 30, "the Dismiss button")
        b.wait_for("!" + has_text("connection refused"), 60, "the failed stream to go")
    assert "127.0.0.1" in text and "failed" in text
    check_png(shot)
    keep_screenshot(shot, "dashboard-failed-stream.png")
    store = Store(db)
    job = next(j for j in store.recent_jobs() if j["kind"] == "dashboard-live")
    assert job["status"] == "failed" and "connection refused" in job["error"]


@pytest.mark.slow
def test_reload_finds_the_live_stream_and_stop_ends_its_processes(dashboard, rtsp_server, tmp_path):
    url, proc, db = dashboard
    with browser(tmp_path / "profile") as b:
        start_stream(b, url, rtsp_server.url, "udp", watch="a telephone is ringing")
        b.wait_for(has_text("watching rtsp:") + " && " + has_text("Stream health"), 240, "the live view")
        try:  # the demo loop rings at 10 s; the watch looks back over the last 30 s every 5 s
            b.wait_for(has_text("Watches that fired") + " && " + has_text("a telephone is ringing:"), 240,
                       "the watch to fire")
        except TimeoutError:
            raise AssertionError(b.js("document.body.innerText")) from None
        b.wait_for("[...document.querySelectorAll('[data-testid=stImage] img')].some(i => i.naturalWidth === 640 && "
                   "i.naturalHeight === 360) && " + has_text("boxes from the analysis of"), 60, "the live picture")
        first_picture = b.js("document.querySelector('[data-testid=stImage] img').src")
        b.wait_for(f"document.querySelector('[data-testid=stImage] img').src !== {first_picture!r}", 30,
                   "a newer picture")
        b.wait_for("[...document.querySelectorAll('[data-testid=stCodeBlock], code')].some(c => "
                   "c.innerText.includes('[00:'))", 120, "a transcript line")
        actors = pipeline_actors(proc.pid)
        # the stream's own ingest and sink, and its stage actors where each pipeline has its own
        assert {"IngestActor", "SinkActor"} <= {k for t in actors.values() for k in ("IngestActor", "SinkActor")
                                                if k in t}, actors
        b.js("window.beforeReload = true")
        b.call("Page.reload")  # a new Streamlit session: nothing of the old tab's state is left
        b.wait_for("window.beforeReload === undefined && " + has_text("Streams") + " && " + has_text("watching rtsp:"),
                   120, "the stream after the reload")
        # the new tab rebuilds the view from the sink's feed: bars on the timeline, transcript and fired watches
        try:
            b.wait_for("document.querySelectorAll('.vega-embed svg path[aria-roledescription=\"bar\"]').length > 0 && "
                       + has_text("[00:") + " && " + has_text("a telephone is ringing:"), 120, "the rebuilt live view")
        except TimeoutError:
            raise AssertionError(b.js("document.body.innerText")) from None
        time.sleep(1)
        text_after_reload = b.js("document.body.innerText")
        shot = tmp_path / "live.png"
        b.screenshot(shot)
        b.wait_for(click("Stop"), 30, "the Stop button")
        b.wait_for("!" + has_text("watching rtsp:") + " && " + has_text("(job stream-"), 180, "the saved result")
    assert "Stop" in text_after_reload and "Choose a source" not in text_after_reload
    check_png(shot)
    keep_screenshot(shot, "dashboard-live.png")
    deadline = time.time() + 60
    while time.time() < deadline and any(psutil.pid_exists(p) for p in actors):
        time.sleep(1)
    assert not [t for p, t in actors.items() if psutil.pid_exists(p)]
    job = next(j for j in Store(db).recent_jobs() if j["kind"] == "dashboard-live" and j["status"] != "failed")
    assert job["status"] == "done"
    assert Store(db).rows("events", job["id"])
