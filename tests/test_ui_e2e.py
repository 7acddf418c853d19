"""End to end in headless Chromium: `foresight dashboard` serves the page, a file upload runs an analysis,
and the screenshot shows the timeline; a refused upload says why and is deleted; the real upload limit is shown
and the developer chrome is not."""

from __future__ import annotations

import time

import pytest

from tests.helpers.dashboard import (
    browser,
    check_png,
    click,
    dashboard_server,
    has_text,
    keep_screenshot,
    set_file_until,
)


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory):
    db = tmp_path_factory.mktemp("dash") / "dash.db"
    with dashboard_server(db, "--max-upload-mb", "512") as (url, _):
        yield url, db


def upload(b, url: str, path, navigate: bool = True) -> str:
    """Upload `path` and press Analyze; returns the page's text from before the upload."""
    if navigate:
        b.call("Page.navigate", url=url)
    # Streamlit's rounded "N per file" must be hidden (512 MB read "1GB per file"); ours says the limit exactly
    b.wait_for("document.querySelector('input[type=file]') !== null && " + has_text("video or audio, up to") +
               " && !" + has_text("per file"), 60, "the upload widget with the real limit only")
    before = b.js("document.body.innerText")
    set_file_until(b, path, has_text(path.name), "the upload to reach the server")
    b.wait_for(click("Analyze"), 30, "an enabled Analyze button")
    return before


@pytest.mark.slow
def test_refused_upload_is_deleted_and_limits_are_the_real_ones(dashboard, tmp_path):
    url, db = dashboard
    bad = tmp_path / "notes.mp4"
    bad.write_bytes(b"\x00garbage" * 100)
    with browser(tmp_path / "profile") as b:
        before = upload(b, url, bad)
        b.wait_for(has_text("uploaded file notes.mp4: not a readable media file"), 60, "the refusal")
        text = b.js("document.body.innerText")
        deploy = b.js("[...document.querySelectorAll('button')].some(x => x.innerText.trim() === 'Deploy')")
    assert "up to 512 MB and 60 min" in text, text
    assert "up to 512 MB" in before and "1GB" not in before, before
    assert not deploy  # client.toolbarMode = minimal
    media = db.parent / "dashboard-media"
    assert not [p for p in media.rglob("*") if p.is_file()]


@pytest.mark.slow
def test_upload_analysis_screenshot_shows_timeline(dashboard, demo_clip, tmp_path):
    url, _ = dashboard
    with browser(tmp_path / "profile") as b:
        b.call("Page.navigate", url=url)
        slider = "[data-testid=stSlider] input[type=range]"
        b.wait_for(f"document.querySelector({slider!r}) !== null", 90, "the safety slider")
        detector = "input[aria-label='Object detector']"  # the sidebar's --detector, at its default
        b.wait_for(f"document.querySelector({detector!r})?.value === 'ssd-mobilenetv2'", 30, "the detector box")
        pose = "input[aria-label='Pose model']"  # and its --pose
        b.wait_for(f"document.querySelector({pose!r})?.value === 'movenet-multipose'", 30, "the pose box")
        b.press(slider, "Home", 36)  # the most watchful threshold: the demo then raises an alert
        b.wait_for(f"document.querySelector({slider!r}).value === '0.05' && " + has_text("0.05"), 30,
                   "the safety threshold at 0.05")
        upload(b, url, demo_clip[0], navigate=False)
        b.wait_for(has_text("Timeline") + " && document.querySelector('.vega-embed svg') !== null", 180,
                   "the timeline chart")
        b.wait_for(has_text("evidence:"), 30, "an alert with its reason and evidence")
        b.js("[...document.querySelectorAll('h3')].find(h => h.innerText.trim() === 'Alerts').scrollIntoView()")
        time.sleep(1)
        alert_shot = tmp_path / "alert.png"
        b.screenshot(alert_shot)
        alerts = b.js("document.body.innerText")
        b.js("window.scrollTo(0, 0)")
        b.wait_for(has_text("Search moments"), 30)
        b.type_into("input[placeholder='someone mentions the front door']", "telephone ringing")
        b.wait_for(has_text("method: text-match") + " && " + click("▶ Play"), 120, "the results and a Play button")
        b.wait_for("document.querySelector('video') !== null", 60, "the player")
        video_start = b.js("document.querySelector('video').currentSrc")
        time.sleep(2)  # let vega finish drawing
        text = b.js("document.body.innerText")
        shot = tmp_path / "dashboard.png"
        b.screenshot(shot)
        # a reload keeps it open (the URL has its job); the history reopens it too and offers its exports
        b.js("window.beforeReload = true")
        b.call("Page.reload")
        b.wait_for("window.beforeReload === undefined && (() => { const s = [...document.querySelectorAll('summary')]"
                   ".find(x => x.innerText.includes('History: past jobs')); if (s) s.click(); return !!s; })()", 60,
                   "the history")
        b.wait_for(has_text("WebVTT") + " && " + has_text("CSV") + " && " + has_text("Source contains"), 30,
                   "the history's list")
        time.sleep(1)  # the table is drawn on a canvas
        # the reload keeps the open result: its job is in the URL (?job=)
        assert "demo.mp4: 20.0 s" in b.js("document.body.innerText") and "job=" in b.js("location.search")
        history = tmp_path / "history.png"
        b.screenshot(history)
        b.wait_for(click("Open"), 30, "the Open button")
        b.wait_for(has_text("demo.mp4: 20.0 s") + " && document.querySelector('.vega-embed svg') !== null", 60,
                   "the reopened job")
    assert "demo.mp4" in text and "Transcript" in text and "front door" in text.lower()
    assert "▶ Play" in text and "method: text-match" in text and "Stream health" not in text
    assert video_start  # the player has the clip loaded
    assert "critical" in alerts and "Triggered by" in alerts and "lead time" in alerts  # full reason, in mm:ss
    check_png(shot)
    check_png(alert_shot)
    keep_screenshot(alert_shot, "dashboard-alert.png")
    check_png(history)
    keep_screenshot(shot, "dashboard-file.png")
    keep_screenshot(history, "dashboard-history.png")
