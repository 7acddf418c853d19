"""`foresight dashboard` on a loopback port and headless Chromium pointed at it, for the browser tests."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psutil
import pytest

from tests.helpers.cdp import Chromium
from tests.helpers.cli import ROOT, free_port


def wait_healthy(url: str, what: str, timeout_s: float = 60.0) -> None:
    """Wait until the Streamlit server at `url` answers its health check; fail the test after `timeout_s`."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        try:
            if httpx.get(url + "/_stcore/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.5)
    pytest.fail(f"{what} did not come up")


@contextmanager
def dashboard_server(db: Path, *flags: str) -> Iterator[tuple[str, subprocess.Popen]]:
    """The dashboard on a free port with store `db`; yields its URL and process (the leader of its own session)."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from ui.launch import dashboard_main; "
                             "sys.exit(dashboard_main(sys.argv[1:]))", "--port", str(port), "--db", str(db), *flags],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, "the dashboard")
        yield url, proc
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


@contextmanager
def browser(profile: Path, window: tuple[int, int] = (1400, 1800)) -> Iterator[Chromium]:
    exe = shutil.which("chromium")
    if exe is None:
        pytest.fail("Debian's chromium is required (apt-get install chromium)")
    b = Chromium(exe, profile, free_port(), window)
    try:
        b.call("Page.enable")
        yield b
    finally:
        b.close()


def has_text(text: str) -> str:
    """A JS condition: the page's visible text contains `text`."""
    return f"(document.body && document.body.innerText.includes({text!r}))"


def click(label: str, selector: str = "button") -> str:
    """A JS expression that clicks the first enabled element matching `selector` whose text is `label`; true if
    it did (use with `Chromium.wait_for`)."""
    return (f"(() => {{ const b = [...document.querySelectorAll({selector!r})].find(x => x.innerText.trim() === "
            f"{label!r} && !x.disabled); if (b) {{ b.click(); return true; }} return false; }})()")


def retry_until(act, b, done: str, what: str, tries: int = 3, wait_s: float = 20, state: str | None = None) -> None:
    """Do `act()` until the JS condition `done` holds: what the page is given while it reruns (a loaded machine)
    can be dropped by Streamlit, so it is given again. `state`, a JS expression, is added to the last timeout."""
    for attempt in range(tries):
        act()
        try:
            b.wait_for(done, wait_s, what)
            return
        except TimeoutError as exc:
            if attempt == tries - 1:
                if state is None:
                    raise
                raise TimeoutError(f"{exc}\nthe page's state: {b.js(state)}") from None


def click_until(b, label: str, done: str, what: str, tries: int = 3, wait_s: float = 20) -> None:
    """Click the `label` button until the JS condition `done` holds: a click that lands while the page reruns
    (a loaded machine; a text box committing on Enter) is dropped by Streamlit, so it is made again."""
    retry_until(lambda: b.wait_for(click(label) + " || " + done, 30, f"the {label} button"), b, done, what, tries,
                wait_s)


def set_file_until(b, path: Path, done: str, what: str, tries: int = 3, wait_s: float = 20) -> None:
    """Give the page's file input `path` until the JS condition `done` holds. Streamlit ignores a file given while
    the input is disabled (its connection to the server is being re-made, on a loaded machine) and can lose one
    given while a rerun replaces the input, so each try waits for an enabled input first, and empties an input
    that still holds the file of a try Streamlit lost (the same file given again changes nothing, so the page
    is not told; a loaded run failed so after three tries, the input holding the file)."""
    enabled = "input[type=file]:not([disabled])"

    def give() -> None:
        b.wait_for("[...document.querySelectorAll('input[type=file]')].some(i => !i.disabled)", 60,
                   "an enabled file input")
        if b.js(f"document.querySelector({enabled!r})?.files.length > 0"):
            b.set_file(enabled, None)
        b.set_file(enabled, path)

    retry_until(give, b, done, what, tries, wait_s,
                state="[...document.querySelectorAll('input[type=file]')].map(i => ({disabled: i.disabled, "
                      "files: i.files.length}))")


def expander_text(b, title: str) -> str:
    """What the expander titled `title` shows, with the values of its text boxes: the part of the page that a
    failure is about (the whole page runs past what a CI log keeps)."""
    return b.js(f"(() => {{ const d = [...document.querySelectorAll('details')].find(x => x.innerText.includes("
                f"{title!r})); if (!d) return 'no expander {title}'; const v = [...d.querySelectorAll('input')]"
                ".map(i => (i.getAttribute('aria-label') || '?') + '=' + i.value).join(', '); "
                "return d.innerText + ' | inputs: ' + v; })()")


def keep_screenshot(shot: Path, name: str, width: int = 900) -> None:
    """`FORESIGHT_DASHBOARD_DOCS=docs/img pytest ...` keeps the tests' screenshots there for the docs: cut below
    the last content of the main column, `width` pixels wide, 64 colours (a few tens of kB each)."""
    target = os.environ.get("FORESIGHT_DASHBOARD_DOCS")
    if not target:
        return
    import numpy as np
    from PIL import Image

    im = Image.open(shot).convert("RGB")
    ink = np.flatnonzero((np.asarray(im)[:, 320:] < 240).any(axis=(1, 2)))  # right of the sidebar
    im = im.crop((0, 0, im.width, min(im.height, int(ink.max()) + 24 if ink.size else im.height)))
    im = im.resize((width, round(im.height * width / im.width)), Image.LANCZOS)
    im.quantize(colors=64, method=Image.Quantize.MEDIANCUT).save(Path(target) / name, optimize=True)


def check_png(shot: Path, min_bytes: int = 20_000) -> None:
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > min_bytes, (shot, len(png))


URL_INPUT = "input[placeholder='rtsp://camera/stream']"


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


def pipeline_actors(root_pid: int, kinds: tuple[str, ...] = ("IngestActor",)) -> dict[int, str]:
    """The Ray actor processes of these `kinds` (default: each stream's ingest actor) in the process tree of
    `root_pid` (a dashboard or an API server; other Ray sessions on the machine are not looked at)."""
    out = {}
    for p in psutil.Process(root_pid).children(recursive=True):
        try:
            title = " ".join(p.cmdline())
        except psutil.Error:
            continue
        if title.startswith("ray::") and any(kind in title for kind in kinds):
            out[p.pid] = title
    return out


VIDEO_SRCS = "[...document.querySelectorAll('video')].map(v => v.src)"


def playing_video(b, before: list[str], what: str) -> None:
    """Wait until a video that was not on the page before (`before`: the srcs then) plays, muted, a second past
    where it was once loaded."""
    fresh = f"[...document.querySelectorAll('video')].filter(v => !{before!r}.includes(v.src))"
    b.wait_for(f"{fresh}.length > 0", 60, what)
    # Chromium holds a muted autoplay back while it is off screen: look at it, as whoever clicked Play does
    b.js(f"{fresh}.at(-1).scrollIntoView({{block: 'center'}})")
    b.wait_for(f"{fresh}.some(v => v.readyState >= 3)", 60, what)  # loaded and put at its start time
    b.js(f"window.seenAt = new Map({fresh}.map(v => [v.src, v.currentTime]))")
    # ... and keep looking at it: the live view's reruns add lines above it, and Chromium starts a muted autoplay
    # only while the player is in view (nothing here calls play())
    look = f"({fresh}.at(-1)?.scrollIntoView({{block: 'center'}}), true)"
    try:
        b.wait_for(f"{look} && {fresh}.some(v => !v.paused && v.muted && "
                   "v.currentTime > (window.seenAt.get(v.src) ?? 0) + 1)", 60, what + " playing")
    except TimeoutError:
        states = b.js("[...document.querySelectorAll('video')].map(v => ({src: v.src.slice(-12), paused: v.paused, "
                      "muted: v.muted, t: v.currentTime, ready: v.readyState, ended: v.ended, "
                      "top: Math.round(v.getBoundingClientRect().top), seen: window.seenAt.get(v.src)}))")
        raise AssertionError(f"{what} does not play: {states} (before: {before})") from None
