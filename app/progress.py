"""Progress of an in-process analysis on stderr: a bar on terminals, `plain` lines for logs, or nothing.

The Ray runner reports position and stream health itself (`pipelines/spine/pipeline.py`); a file analyzed in
this process reports only the fraction done, which is all a file of known length needs.
"""

from __future__ import annotations

import sys


class FileProgress:
    """`update(fraction)` after each second; use as a context manager so the bar is cleared at the end."""

    def __init__(self, mode: str):
        if mode not in ("bar", "plain", "none"):
            raise ValueError(f"progress mode {mode!r}")
        self.mode = mode
        self._bar = None
        self._last = -1

    def __enter__(self) -> FileProgress:
        if self.mode == "bar":
            from tqdm import tqdm

            self._bar = tqdm(total=100, unit="%", desc="analyzing", file=sys.stderr, leave=False,
                             bar_format="{l_bar}{bar}| {n:.0f}% [{elapsed}<{remaining}]")
        return self

    def update(self, fraction: float) -> None:
        percent = int(round(100 * min(max(fraction, 0.0), 1.0)))
        if self._bar is not None:
            self._bar.n = percent
            self._bar.refresh()
        elif self.mode == "plain" and percent // 10 != self._last // 10:
            print(f"progress: {percent} %", file=sys.stderr, flush=True)
        self._last = percent

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.close()
