"""End to end in headless Chromium: `foresight dashboard` serves the page, a file upload runs an analysis,
and the screenshot shows the timeline."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import httpx
import pytest

from tests.helpers.cdp import Chromium
from tests.helpers.cli import ROOT, free_port


@pytest.fixture
def dashboard(tmp_path):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from ui.launch import dashboard_main; "
                             "sys.exit(dashboard_main(sys.argv[1:]))", "--port", str(port),
                             "--db", str(tmp_path / "dash.db")],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            if httpx.get(url + "/_stcore/health", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.5)
    else:
        pytest.fail("the dashboard did not come up")
    yield url
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=30)


def _has_text(text: str) -> str:
    return f"document.body && document.body.innerText.includes({text!r})"


@pytest.mark.slow
def test_upload_analysis_screenshot_shows_timeline(dashboard, demo_clip, tmp_path):
    exe = shutil.which("chromium")
    if exe is None:
        pytest.fail("Debian's chromium is required (apt-get install chromium)")
    browser = Chromium(exe, tmp_path / "profile", free_port())
    try:
        browser.call("Page.enable")
        browser.call("Page.navigate", url=dashboard)
        browser.wait_for("document.querySelector('input[type=file]') !== null", 60, "the upload widget")
        browser.set_file("input[type=file]", demo_clip[0])
        browser.wait_for(_has_text("demo.mp4"), 30, "the upload to reach the server")
        click = ("(() => { const b = [...document.querySelectorAll('button')].find("
                 "x => x.innerText.trim() === 'Analyze' && !x.disabled); if (b) { b.click(); return true; } "
                 "return false; })()")
        browser.wait_for(click, 30, "an enabled Analyze button")
        browser.wait_for(_has_text("Timeline") + " && document.querySelector('.vega-embed canvas, .vega-embed svg')"
                         " !== null", 180, "the timeline chart")
        browser.wait_for(_has_text("Search moments"), 30)
        browser.type_into("input[placeholder='someone mentions the front door']", "telephone ringing")
        browser.wait_for(_has_text("method: text-match") + " && document.querySelector('video') !== null", 120,
                         "the moments table and the player")
        video_start = browser.js("document.querySelector('video').currentSrc")
        time.sleep(2)  # let vega finish drawing
        text = browser.js("document.body.innerText")
        shot = tmp_path / "dashboard.png"
        browser.screenshot(shot)
    finally:
        browser.close()
    assert "demo.mp4" in text and "Transcript" in text and "front door" in text.lower()
    assert "Play moment" in text and "method: text-match" in text
    assert video_start  # the player has the clip loaded
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000
    target = os.environ.get("FORESIGHT_DASHBOARD_PNG")
    if target:  # `FORESIGHT_DASHBOARD_PNG=docs/dashboard.png pytest ...` refreshes the picture in the docs
        shutil.copyfile(shot, target)
