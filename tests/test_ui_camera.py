"""A camera in the dashboard, in headless Chromium: the live picture's boxes lie on the frame they were found on,
and a camera away for 60 s resumes as the same job with the gap on the timeline.

The camera is a scripted clip looped over loopback RTSP: a dog (a real Tux Paint stamp) on a grey field jumps
to another corner every second. A box drawn from another second's detections sits on an empty corner, so each
picture the page shows is checked where it is: the corner the dog is in must hold the box.
"""

from __future__ import annotations

import base64
import io
import re
import time

import av
import httpx
import numpy as np
import pytest
from PIL import Image

from pipelines.media.ingest_stats import ReconnectPolicy
from pipelines.sinks.store import Store
from tests.helpers.dashboard import (
    browser,
    check_png,
    dashboard_server,
    has_text,
    keep_screenshot,
    start_stream,
)
from training.media.loopback import RtspServer
from training.perception.detset import paste
from training.perception.detset_sources import load_cutout

DOG = "/usr/share/tuxpaint/stamps/animals/mammals/dogs/dog.png"
CORNERS = ((16, 16), (464, 281), (464, 16), (16, 281))  # top-left of the dog, in the order it visits them
SIZE, FPS, SECONDS = (640, 480), 10, 12
BOX_RGB = np.array([0x1F, 0x77, 0xB4])  # ui/picture.py draws an object's box (any label but person) in this
# colour, text read on screen in another
OUTAGE_S = 60


def jump_clip(path) -> list[tuple[int, int, int, int]]:
    """Write the scripted H.264 clip; returns the dog's box (x0, y0, x1, y1) at each corner."""
    cut = load_cutout(DOG)
    frames, boxes = [], []
    for x, y in CORNERS:
        canvas = np.full((SIZE[1], SIZE[0], 3), 128, np.uint8)
        ys, xs = np.nonzero(paste(canvas, cut, x, y, 160 / cut.shape[1]))
        frames.append(canvas)
        boxes.append((int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1))
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=FPS)
        stream.width, stream.height, stream.pix_fmt = SIZE[0], SIZE[1], "yuv420p"
        stream.options = {"g": str(FPS), "tune": "stillimage"}
        for i in range(SECONDS * FPS):
            frame = av.VideoFrame.from_ndarray(frames[(i // FPS) % len(CORNERS)], format="rgb24")
            out.mux(stream.encode(frame))
        out.mux(stream.encode())
    return boxes


@pytest.fixture(scope="module")
def camera(tmp_path_factory):
    """The dashboard on one live loopback RTSP stream of the scripted clip."""
    root = tmp_path_factory.mktemp("camera")
    boxes = jump_clip(root / "jump.mp4")
    server = RtspServer(root / "jump.mp4")
    server.start()
    try:
        with dashboard_server(root / "dash.db") as (url, proc), browser(root / "profile") as b:
            start_stream(b, url, server.url, "udp")
            b.wait_for(has_text("watching rtsp:") + " && " + has_text("Stream health"), 240, "the live view")
            yield b, url, server, root / "dash.db", boxes
    finally:
        server.kill()


PICTURE = ("(() => { const i = [...document.querySelectorAll('[data-testid=stImage] img')].find(i => "
           "i.naturalWidth === 640); return i ? i.src : null; })()")


# pictures the page asked the server for and did not get (the /media 404s of a picture a rerun had replaced)
MISSING_MEDIA = ("performance.getEntriesByType('resource').filter(e => e.name.includes('/media/') && "
                 "e.responseStatus >= 400).map(e => e.name)")


def shown_picture(url: str, src: str) -> np.ndarray | None:
    """The picture the page shows: the bytes of its data URL, or fetched as the browser did (None when that
    fails)."""
    if src.startswith("data:"):
        data = base64.b64decode(src.split(",", 1)[1])
    else:
        reply = httpx.get(src if src.startswith("http") else url + src, timeout=10)
        if reply.status_code != 200:
            return None
        data = reply.content
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB")).astype(np.int16)


def dog_corner(picture: np.ndarray, boxes: list) -> int:
    """The corner the dog is in on this picture: the one whose box differs most from the grey field."""
    return int(np.argmax([np.abs(picture[y0:y1, x0:x1] - 128).mean() for x0, y0, x1, y1 in boxes]))


def box_pixels(picture: np.ndarray) -> np.ndarray:
    """Where the picture has the drawn box's colour (its outline and its label tag)."""
    return np.abs(picture - BOX_RGB).max(axis=-1) < 40


@pytest.mark.slow
def test_each_picture_has_its_box_on_the_dog_it_shows(camera, tmp_path):
    b, url, _, _, boxes = camera
    b.js("performance.setResourceTimingBufferSize(100000)")
    b.wait_for(f"{PICTURE} !== null", 120, "the live picture")
    corners, checked, last = set(), 0, None
    deadline = time.time() + 90
    while time.time() < deadline and (checked < 6 or len(corners) < 3):
        src = b.js(PICTURE)
        picture = shown_picture(url, src) if src and src != last else None
        if picture is None or picture.shape[:2] != (SIZE[1], SIZE[0]):
            time.sleep(0.3)
            continue
        last = src
        corner = dog_corner(picture, boxes)
        drawn = box_pixels(picture)
        shows = [np.abs(picture[y0:y1, x0:x1] - 128).mean() > 8 for x0, y0, x1, y1 in boxes]  # a dog is there
        near = [np.zeros_like(drawn) for _ in boxes]
        for mask, (x0, y0, x1, y1) in zip(near, boxes, strict=True):
            mask[max(0, y0 - 20): y1 + 8, max(0, x0 - 8): x1 + 8] = True  # the outline, and the tag above it
        at = [int(drawn[mask].sum()) for mask in near]
        Image.fromarray(picture.astype(np.uint8)).save(tmp_path / f"picture-{checked}.png")  # for a failure
        # the dog's corner has its box; a box elsewhere is only where this very picture shows a dog too (a
        # frame decoded with a trace of the last position, after a lost UDP packet), never on an empty corner
        assert at[corner] > 300, f"no box on the dog (corner {corner}): {at}"
        assert sum(at) >= 0.9 * drawn.sum(), (at, int(drawn.sum()))
        assert all(shows[c] for c, n in enumerate(at) if n > 300), (at, shows)
        corners.add(corner)
        checked += 1
    assert checked >= 6 and len(corners) >= 3, (checked, corners)
    assert b.js(MISSING_MEDIA) == []  # a picture travels in the page: the browser never asks for a deleted one


# Elements of the main column that end right of a `width`-px screen, unless a scrolling box of their own holds
# them (a code block, a table); and how wide the page scrolls.
OVERFLOW = """(() => { const W = document.documentElement.clientWidth, main = document.querySelector('[data-testid=stMain]');
  const clipped = e => { for (let a = e.parentElement; a && a !== main; a = a.parentElement) {
    if (['auto', 'scroll', 'hidden', 'clip'].includes(getComputedStyle(a).overflowX)) return true; } return false; };
  const bad = [...main.querySelectorAll('*')].filter(e => { const r = e.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && r.right > W + 1 && e.checkVisibility({visibilityProperty: true})
      && !clipped(e); });
  return {width: W, scroll: document.documentElement.scrollWidth,
          bad: bad.slice(0, 8).map(e => e.tagName + ' ' + (e.getAttribute('data-testid') || e.className) + ' '
            + Math.round(e.getBoundingClientRect().right))}; })()"""


FIELD_PX = 60_000  # the live picture at a phone's width, 388 x 291 px, is mostly its grey field


def grey_field_pixels(shot) -> int:
    """How many pixels of a screenshot have the clip's grey field (128, as the picture is scaled and encoded)."""
    rgb = np.asarray(Image.open(shot).convert("RGB")).astype(np.int16)
    return int((np.abs(rgb - 128).max(axis=-1) <= 6).sum())


@pytest.mark.slow
def test_the_live_view_fits_a_420_px_phone(camera, tmp_path):
    b = camera[0]
    b.call("Emulation.setDeviceMetricsOverride", width=420, height=2400, deviceScaleFactor=1, mobile=True)
    try:
        b.call("Page.reload")  # laid out at 420 px from the start, as on a phone
        b.wait_for(f"{PICTURE} !== null && " + has_text("Timeline") + " && " + has_text("watching rtsp:") + " && "
                   + has_text("job stream-"), 120, "the live view on a phone")
        time.sleep(2)  # a refresh or two at the new width
        fit = b.js(OVERFLOW)
        shot, field, deadline = tmp_path / "live-420.png", 0, time.time() + 30
        while field < FIELD_PX and time.time() < deadline:  # a frame captured mid-rerun or mid-paint: take another
            b.js("window.scrollTo(0, 0)")
            b.screenshot(shot)
            field = grey_field_pixels(shot)
    finally:
        b.call("Emulation.clearDeviceMetricsOverride")
    assert fit["width"] == 420 and fit["scroll"] <= 420 and not fit["bad"], fit
    assert field >= FIELD_PX, f"the phone's screenshot does not show the live picture ({field} px of its field)"
    check_png(shot)
    keep_screenshot(shot, "dashboard-live-420.png", width=420)


@pytest.mark.slow
def test_a_camera_away_for_60_s_resumes_as_the_same_job_with_the_gap_on_the_timeline(camera, tmp_path):
    b, _, server, db, _ = camera
    b.wait_for(has_text("job stream-"), 120, "the stream's row with its job")  # after a reload, rows come last
    job = re.search(r"job (stream-\S+)", b.js("document.body.innerText"))
    assert job, b.js("document.body.innerText")
    job_id = job.group(1).split(",")[0]
    server.kill()
    killed_at = time.time()
    b.wait_for(has_text("reconnecting"), 60, "the row to say reconnecting")
    b.wait_for(has_text("STALE: the camera is away since"), 30, "the frozen picture marked stale")
    b.wait_for(has_text("Try this:") + " || " + has_text("last error"), 60, "why, while it is away")
    time.sleep(max(0.0, killed_at + OUTAGE_S - time.time()))
    text = b.js("document.body.innerText")
    assert "reconnecting" in text and job_id in text, text  # still the same stream, not dropped
    server.start()
    back_at = time.time() - 1.5  # start() waits 1.5 s after the pusher starts
    try:
        b.wait_for(has_text("source away:") + " && [...document.querySelectorAll('.vega-embed svg text')]"
                   ".some(t => t.textContent === 'outages')", 180, "the gap on the timeline")
    except TimeoutError:
        raise AssertionError(b.js("document.body.innerText")) from None
    text = b.js("document.body.innerText")
    gap = re.search(r"source away: \d\d:\d\d-\d\d:\d\d \((\d+) s\)", text)
    assert gap, text
    real = back_at - killed_at
    # Its true length: at most what the second in flight at the kill adds before it, and after it the longest
    # backoff wait (an attempt can fail just before the camera is back) and the reconnect's own start-up.
    policy = ReconnectPolicy()
    late = policy.max_s * (1 + policy.jitter) + 4
    assert real - 2 <= int(gap.group(1)) <= real + late, (gap.group(1), real, late)
    assert job_id in text and "failed" not in text.split("Stream health")[0]
    shot = tmp_path / "outage.png"
    b.screenshot(shot)
    check_png(shot)
    keep_screenshot(shot, "dashboard-camera-back.png")
    jobs = [j for j in Store(db).recent_jobs() if j["kind"] == "dashboard-live"]
    assert [j["id"] for j in jobs] == [job_id] and jobs[0]["status"] == "running"  # one job, resumed
