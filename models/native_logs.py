"""Native libraries' chatter kept off the user's terminal.

MediaPipe and the LiteRT runtime under it write INFO and WARNING lines ("Sparsity tensors may not yet be fully
supported", "Created TensorFlow Lite XNNPACK delegate", ...) straight to file descriptor 2 when a graph is built,
first run and closed: about 60 lines per `foresight analyze`, and no environment variable or Python logging
setting reaches them. `quiet_native_logs()` points descriptor 2 at a temporary file for such a call, then puts
back every line that is not one of those known log formats (an error, a traceback, another thread's progress
bar), so nothing else is lost, only delayed until the call returns. `FORESIGHT_NATIVE_LOGS=1` keeps them all.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# LiteRT's "INFO: [file.cc:12] ..." / "WARNING: [file.cc:12] ...", TFLite's delegate notice, and absl's
# "W0000 00:00:1796117143.036758    6131 file.cc:181] ..." lines of severity INFO or WARNING.
NOISE = re.compile(
    r"^(?:(?:INFO|WARNING): (?:\[[\w./-]+:\d+\]|Created TensorFlow Lite)"
    r"|WARNING: Logging before InitGoogle"
    r"|[IW]\d{4} [\d:.]+\s+\d+ [\w./-]+:\d+\])"
)

_lock = threading.Lock()
_depth = 0
_saved_fd: int | None = None
_capture = None


def is_noise(line: str) -> bool:
    """True for a native INFO/WARNING log line that `quiet_native_logs` drops."""
    return bool(NOISE.match(line))


def _begin() -> None:
    global _depth, _saved_fd, _capture
    with _lock:
        if _depth == 0:
            sys.stderr.flush()
            _capture = tempfile.TemporaryFile()
            _saved_fd = os.dup(2)
            os.dup2(_capture.fileno(), 2)
        _depth += 1


def _end() -> None:
    global _depth, _saved_fd, _capture
    with _lock:
        _depth -= 1
        if _depth > 0 or _saved_fd is None or _capture is None:
            return
        sys.stderr.flush()
        os.dup2(_saved_fd, 2)
        os.close(_saved_fd)
        _capture.seek(0)
        text = _capture.read().decode("utf-8", errors="replace")
        _capture.close()
        _saved_fd, _capture = None, None
    kept = "".join(line for line in text.splitlines(keepends=True) if not is_noise(line))
    if kept:
        os.write(2, kept.encode("utf-8"))


@contextmanager
def quiet_native_logs() -> Iterator[None]:
    """Drop native INFO/WARNING log lines written while the block runs; everything else reaches stderr after it.

    Re-entrant and thread-safe: overlapping blocks (two graphs built on two threads) share one capture, which
    ends with the last of them."""
    if os.environ.get("FORESIGHT_NATIVE_LOGS") == "1":
        yield
        return
    _begin()
    try:
        yield
    finally:
        _end()
