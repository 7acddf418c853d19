"""The timeline in headless Chromium (tests/tools/timeline_page.py: the dashboard's timeline panel with 0, 1 and
20 non-overlapping events): three distinct lanes, readable labels that never overlap, human names, no Vega
warnings, a click on an event plays the clip from that event's second, and the mouse wheel zooms the time axis."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.helpers.cli import ROOT, free_port
from tests.helpers.dashboard import browser, check_png, has_text, keep_screenshot, wait_healthy

# Per chart: lane titles, y-axis labels and bars with their boxes on the page.
LAYOUT = """(() => {
  const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  return [...document.querySelectorAll('.vega-embed svg')].map(svg => ({
    titles: [...svg.querySelectorAll('.role-title-text text')].map(t => [t.textContent, box(t)]),
    labels: [...svg.querySelectorAll('g.role-axis[aria-label^="Y-axis"] .role-axis-label text')]
              .map(t => [t.textContent, box(t)]),
    bars: [...svg.querySelectorAll('path[aria-roledescription="bar"]')].map(p => [p.getAttribute('aria-label'), box(p)]),
  }));
})()"""


@pytest.fixture(scope="module")
def timeline_page(demo_clip):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / "tests" / "tools" / "timeline_page.py"),
                             "--server.headless", "true", "--server.address", "127.0.0.1", "--server.port", str(port),
                             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT), "FORESIGHT_TIMELINE_MEDIA": str(demo_clip[0])})
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, "the timeline page")
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


X_LABELS = ("[...document.querySelectorAll('.st-key-chart_twenty svg g.role-axis[aria-label^=\"X-axis\"] "
            ".role-axis-label text')].map(t => t.textContent).filter(t => t)")


def span(labels: list[str]) -> float:
    """Seconds between the first and last mm:ss tick label."""
    secs = [int(m) * 60 + int(s) for m, s in (label.split(":")[-2:] for label in labels)]
    return max(secs) - min(secs)


def overlaps(a: list[float], b: list[float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def check_lanes(chart: dict, n_events: int) -> None:
    titles = [t for t, _ in chart["titles"]]
    assert titles == ["audio", "visual", "audio-visual"]
    tops = [box[1] for _, box in chart["titles"]] + [float("inf")]
    labels = chart["labels"]
    for i, (a, box_a) in enumerate(labels):
        assert "_" not in a and (a[:1].isupper() or a == "(no events)")
        assert not [b for b, box_b in labels[i + 1:] if overlaps(box_a, box_b)], a  # never overprinted
    for lane in range(3):  # each lane's rows sit between its title and the next lane's
        rows = [t for t, box in labels if tops[lane] < box[1] < tops[lane + 1]]
        assert rows, (titles[lane], labels)
    assert len(chart["bars"]) == n_events
    assert all(box[2] - box[0] >= 3 and box[3] - box[1] >= 8 for _, box in chart["bars"])  # no hairlines


@pytest.mark.slow
def test_timeline_lanes_labels_and_click_to_play(timeline_page, tmp_path):
    with browser(tmp_path / "profile") as b:
        b.call("Page.addScriptToEvaluateOnNewDocument", source=(
            "window.__warnings = []; for (const k of ['warn', 'error']) { const f = console[k]; "
            "console[k] = (...a) => { window.__warnings.push(a.join(' ')); f.apply(console, a); }; }"))
        b.call("Page.navigate", url=timeline_page)
        b.wait_for("document.querySelectorAll('.vega-embed svg path[aria-roledescription=\"bar\"]').length === 21",
                   90, "three timelines")
        none, one, twenty = b.js(LAYOUT)
        shot = tmp_path / "timeline.png"
        b.screenshot(shot)
        check_lanes(none, 0)
        assert [t for t, _ in none["labels"]] == ["(no events)"] * 3
        check_lanes(one, 1)
        assert [t for t, _ in one["labels"]][0] == "Telephone bell ringing"
        check_lanes(twenty, 20)
        assert len(twenty["labels"]) == 20 and "Fire alarm" in [t for t, _ in twenty["labels"]]
        warnings = b.js("window.__warnings")
        assert not [w for w in warnings if "conflicting sort" in w or "WARN" in w], warnings

        # click the "Door knock" bar (6.0-6.8 s): the clip plays from second 6
        box = b.js("""(() => { const p = [...document.querySelectorAll('.st-key-chart_twenty path[aria-roledescription="bar"]')]
            .find(p => p.getAttribute('aria-label').includes('name: Door knock;'));
            p.scrollIntoView({block: 'center'}); const r = p.getBoundingClientRect();
            return [r.left + r.width / 2, r.top + r.height / 2]; })()""")
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            b.call("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)
        b.wait_for(has_text("playing Door knock from 00:06"), 60, "the picked event")
        b.wait_for("(() => { const v = document.querySelector('.st-key-chart_twenty video'); "
                   "return v !== null && v.readyState >= 1 && Math.abs(v.currentTime - 6) < 0.5; })()", 60,
                   "the player at second 6")
        played = b.js("document.querySelector('.st-key-chart_twenty video').currentTime")

        # the mouse wheel over the lanes zooms their shared time axis (long streams)
        time.sleep(1)
        before = b.js(X_LABELS)
        box = b.js("""(() => { const p = [...document.querySelectorAll('.st-key-chart_twenty path[aria-roledescription="bar"]')]
            .find(p => p.getAttribute('aria-label').includes('name: Door knock;')); const r = p.getBoundingClientRect();
            return [r.left + r.width / 2, r.top + r.height / 2]; })()""")
        b.call("Input.dispatchMouseEvent", type="mouseWheel", x=box[0], y=box[1], deltaX=0, deltaY=-400)
        b.wait_for(f"JSON.stringify({X_LABELS}) !== {json.dumps(json.dumps(before))}", 20, "a zoomed time axis")
        after = b.js(X_LABELS)

        # a phone-sized window, 420 px wide: the same checks, and nothing wider than the screen
        b.call("Emulation.setDeviceMetricsOverride", width=420, height=900, deviceScaleFactor=1, mobile=True)
        b.js("window.beforeReload = true")
        b.call("Page.reload")
        b.wait_for("window.beforeReload === undefined && document.querySelectorAll("
                   "'.vega-embed svg path[aria-roledescription=\"bar\"]').length === 21", 90, "three timelines at 420 px")
        time.sleep(1)
        narrow = b.js(LAYOUT)
        page_width = b.js("document.documentElement.scrollWidth")
        svg_right = b.js("Math.max(...[...document.querySelectorAll('.vega-embed svg')].map("
                         "s => s.getBoundingClientRect().right))")
        narrow_shot = tmp_path / "timeline-420.png"
        b.screenshot(narrow_shot)
    assert 5.5 < played < 6.5
    assert span(after) < span(before) / 1.5, (before, after)  # zoomed in: a shorter stretch of time on the axis
    for chart, n in zip(narrow, (0, 1, 20), strict=True):
        check_lanes(chart, n)
    assert page_width <= 420 and svg_right <= 420, (page_width, svg_right)
    check_png(narrow_shot, 5_000)
    keep_screenshot(narrow_shot, "dashboard-timeline-420.png", width=420)
    check_png(shot)
    keep_screenshot(shot, "dashboard-timeline.png")
