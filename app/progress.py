"""Progress of an analysis on stderr: a bar on terminals, `plain` lines for logs, or nothing.

Both runners report the same thing after each second (`Pipeline.progress` on Ray, `analyze_inline`'s
`progress`): the position in seconds, the duration (None for a live source) and the ingest statistics. A file of
known length shows the percentage done; a live source its position, health and dropped frames.
"""

from __future__ import annotations

import sys


class Progress:
    """`update(progress)` after each second; use as a context manager so the bar is cleared at the end."""

    def __init__(self, mode: str):
        if mode not in ("bar", "plain", "none"):
            raise ValueError(f"progress mode {mode!r}")
        self.mode = mode
        self._bar = None
        self._last = ""

    def __enter__(self) -> Progress:
        return self

    def update(self, progress: dict) -> None:
        if self.mode == "none":
            return
        duration = progress.get("duration")
        line = f"{10 * int(10 * share_done(progress) + 1e-9)} %" if duration else _live(progress)  # every tenth
        if self.mode == "plain":
            if line != self._last:
                print(f"progress: {line}", file=sys.stderr, flush=True)
            self._last = line
            return
        self._draw(progress, duration)

    def _draw(self, progress: dict, duration: float | None) -> None:
        from tqdm import tqdm

        if self._bar is None:
            self._bar = (tqdm(total=100, unit="%", desc="analyzing", file=sys.stderr, leave=False,
                              bar_format="{l_bar}{bar}| {n:.0f}% [{elapsed}<{remaining}]") if duration else
                         tqdm(total=None, unit="s", desc="analyzing", file=sys.stderr, leave=False))
        if duration:
            self._bar.n = int(round(100 * share_done(progress)))
        else:
            stats = progress["stats"]
            self._bar.n = round(progress["position"], 1)
            self._bar.set_postfix_str(f"{stats['health']}, dropped {stats['frames_dropped']}", refresh=False)
        self._bar.refresh()

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.close()


def share_done(progress: dict) -> float | None:
    """The share of a source of known length analysed so far, 0 to 1; None for a camera or an unknown length."""
    if not progress.get("duration"):
        return None
    return min(max(progress["position"] / progress["duration"], 0.0), 1.0)


def _live(progress: dict) -> str:
    stats = progress["stats"]
    return (f"{progress['position']:.0f} s, {stats['health']}, {stats['reconnects']} reconnects, "
            f"{stats['frames_dropped']} frames dropped")
