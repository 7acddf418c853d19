"""A minimal Chrome DevTools Protocol client over `websockets`, enough to drive headless Chromium in tests."""

from __future__ import annotations

import base64
import json
import subprocess
import time
from pathlib import Path

import httpx
from websockets.sync.client import connect

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


class Chromium:
    """Headless Chromium with a fresh profile and remote debugging on a loopback port."""

    def __init__(self, exe: str, profile: Path, port: int, window: tuple[int, int] = (1400, 1800)):
        self.port = port
        self.proc = subprocess.Popen(
            [exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--remote-debugging-port={port}",
             "--remote-debugging-address=127.0.0.1", f"--window-size={window[0]},{window[1]}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.ws = None
        self._id = 0
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                pages = httpx.get(f"http://127.0.0.1:{port}/json/list", timeout=2).json()
                page = next(p for p in pages if p["type"] == "page")
                self.ws = connect(page["webSocketDebuggerUrl"], max_size=64 * 1024 * 1024, open_timeout=10)
                return
            except (httpx.HTTPError, StopIteration, OSError):
                time.sleep(0.3)
        self.close()
        raise TimeoutError("chromium did not open its debugging port")

    def call(self, method: str, timeout: float = 30, **params) -> dict:
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        deadline = time.time() + timeout
        while True:
            msg = json.loads(self.ws.recv(timeout=max(0.1, deadline - time.time())))
            if msg.get("id") == self._id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]

    def js(self, expression: str):
        out = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        return out["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 60, what: str = "") -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                if self.js(expression):
                    return
            except RuntimeError as exc:  # the page is between documents (a reload): ask the next one
                if "navigated or closed" not in str(exc) and "context" not in str(exc).lower():
                    raise
            time.sleep(0.5)
        try:  # what the page showed instead: a flaky wait says why in CI's log
            shown = str(self.js("document.body ? document.body.innerText : ''"))[-1500:]
        except RuntimeError:
            shown = "(page not readable)"
        raise TimeoutError(f"timed out waiting for {what or expression}; the page showed:\n{shown}")

    def set_file(self, selector: str, path: Path | None) -> None:
        """Give the file input `path` (None: empty it)."""
        root = self.call("DOM.getDocument", depth=-1, pierce=True)["root"]["nodeId"]
        node = self.call("DOM.querySelector", nodeId=root, selector=selector)["nodeId"]
        if not node:
            raise RuntimeError(f"no element matches {selector}")
        self.call("DOM.setFileInputFiles", files=[str(path)] if path is not None else [], nodeId=node)

    def type_into(self, selector: str, text: str) -> None:
        """Focus the element, type `text` over what it holds and press Enter (how Streamlit text inputs commit)."""
        if not self.js(f"(() => {{ const e = document.querySelector({selector!r}); if (!e) return false; "
                       "e.focus(); e.select(); return true; })()"):
            raise RuntimeError(f"no element matches {selector}")
        self.call("Input.insertText", text=text)
        for kind in ("keyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", type=kind, key="Enter", code="Enter", windowsVirtualKeyCode=13,
                      **({"text": "\r"} if kind == "keyDown" else {}))

    def press(self, selector: str, key: str, code: int) -> None:
        """Focus the element and press one key (`key` as in KeyboardEvent.key, `code` its virtual key code)."""
        if not self.js(f"(() => {{ const e = document.querySelector({selector!r}); if (!e) return false; "
                       "e.focus(); return true; })()"):
            raise RuntimeError(f"no element matches {selector}")
        for kind in ("keyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", type=kind, key=key, code=key, windowsVirtualKeyCode=code)

    def screenshot(self, path: Path) -> None:
        """The viewport as a PNG, after two animation frames: what the page has painted, not a frame in between."""
        self.js("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))")
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=False)["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        if self.ws is not None:
            self.ws.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
