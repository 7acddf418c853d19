"""Opt-in latency budget for the live spine: a controller picks, each second, the perception tier and frame
rate, and the ingest applies it to the segment before the stages see it (default off: `AnalyzeOptions.budget`
is None and nothing here runs).

The tier "speech+tags" hands the visual stage a segment without frames (it reports the second as unavailable),
and a rate below the decoder's `sample_fps` keeps only the frames on that coarser time grid. The outcome of each
second (latency from the segment's end to its final result, and whether speech or people were seen) is fed back
to the controller from a completion callback, so measuring adds no waiting to the ingest loop.

Degradation is never silent: the hook writes the stream's current level and the seconds spent at each level into
the ingest statistics (`IngestStats.degradation`), which the stream's health, the API, `/metrics` and the
dashboard read. The order is stated in `LEVELS`: the perception frame rate goes down first, then the visual
stage is dropped (speech and sound tags go on).

A dropped second is the backstop's signal: the learner adapts over windows of seconds it has observed, which
under a sudden overload (many streams starting at once) arrive too late, and the reader drops the oldest
seconds meanwhile. Each new drop raises a floor one step along the same order (the mildest action allowed);
the floor steps back down after `RELAX_AFTER` observed seconds within budget and no new drop.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, replace

from pipelines.media.segment import Segment
from pipelines.stages.record import Second

LEVELS = ("full", "frame_rate", "speech+tags")  # the stated order of degradation, mildest first
ORDER = "frame rate first, then the visual stage"
RELAX_AFTER = 10  # observed seconds within budget, with no drop, before the drop backstop steps back down


def level_of(tier: str, fps: float, max_fps: float) -> str:
    """The degradation level of a controller action: full rate, a lowered frame rate, or no visual stage."""
    if tier != "full" or fps <= 0:
        return "speech+tags"
    return "full" if fps >= max_fps - 1e-9 else "frame_rate"


@dataclass(frozen=True)
class LatencyBudget:
    """Mean latency per second the controller keeps to; `mode` "strict" (zero violation) or "relaxed"."""

    latency_s: float = 1.0
    mode: str = "strict"
    seed: int = 0


def thin_frames(seg: Segment, tier: str, fps: float, last_kept: float | None) -> tuple[Segment, float | None]:
    """The segment as the visual stage should see it, and the time of the last frame kept so far (None: none).

    A frame is kept when it opens a new time bucket of width 1/fps after the last kept frame's bucket, both
    taken at the current rate, so a change of rate between seconds never skips a whole second."""
    if tier != "full" or fps <= 0:
        return replace(seg, frames=[], frame_times=[]), last_kept
    frames, times = [], []
    for frame, t in zip(seg.frames, seg.frame_times, strict=True):
        if last_kept is None or math.floor(t * fps + 1e-6) > math.floor(last_kept * fps + 1e-6):
            frames.append(frame)
            times.append(t)
            last_kept = t
    return replace(seg, frames=frames, frame_times=times), last_kept


def busy_second(record: Second) -> bool:
    """Speech or people in a second's final record: the scene-activity flag of the controller's state."""
    visual = record.visual or {}
    return bool(record.speech_prob >= 0.5 or record.transcript or visual.get("persons"))


class BudgetHook:
    """The ingest-side adapter: `apply` before a segment is dispatched, `track` with its final result's future."""

    def __init__(self, budget: LatencyBudget, sample_fps: float, controller=None, stats=None):
        if controller is None:
            from models.cmdp.controller import BudgetConfig, BudgetController

            controller = BudgetController(BudgetConfig(latency_budget_s=budget.latency_s, mode=budget.mode,
                                                       max_fps=sample_fps, seed=budget.seed))
        self.controller = controller
        self.lock = threading.Lock()
        self.done: list[tuple[int, float, bool]] = []
        self.last_kept: float | None = None
        self.decisions: dict[str, int] = {}
        self.observed = 0
        self.max_fps = sample_fps
        self.seconds = {level: 0 for level in LEVELS}  # seconds dispatched at each level
        self.current: dict | None = None
        self.stats = stats  # the stream's IngestStats: its `degradation` is what health and metrics report
        self.budget_s = budget.latency_s
        self.floor = 0  # the drop backstop: index of the mildest action allowed (0: the controller is free)
        self.floor_limit = max(0, len(getattr(controller, "actions", ())) - 1)
        self.drops_seen = 0
        self.calm = 0  # observed seconds within budget since the last drop
        self.raised = 0  # how often a drop raised the floor

    def apply(self, seg: Segment) -> Segment:
        self._drain()
        self._backstop()
        action = self.controller.decide(seg.index, floor=self.floor)
        key = f"{action.tier}@{action.fps:g}"
        self.decisions[key] = self.decisions.get(key, 0) + 1
        level = level_of(action.tier, action.fps, self.max_fps)
        self.seconds[level] += 1
        self.current = {"level": level, "tier": action.tier, "fps": action.fps}
        if self.stats is not None:
            self.stats.degradation = self.state()
        thinned, self.last_kept = thin_frames(seg, action.tier, action.fps, self.last_kept)
        return thinned

    def track(self, seg: Segment, future) -> None:
        """`future` (e.g. `ref.future()`) resolves to the second's final record."""
        index, emitted = seg.index, seg.emitted_wall

        def finished(f) -> None:
            try:
                record = f.result()
            except Exception:  # a failed second is not an observation; the stream goes on
                return
            with self.lock:
                self.done.append((index, time.time() - emitted, busy_second(record or Second())))

        future.add_done_callback(finished)

    def _drain(self) -> None:
        with self.lock:
            done, self.done = self.done, []
        for index, latency, busy in sorted(done):
            self.controller.observe(index, latency, busy)
            self.calm = self.calm + 1 if latency <= self.budget_s else 0
        self.observed += len(done)

    def _backstop(self) -> None:
        """Raise the floor one step on new dropped seconds; lower it one step after a calm stretch."""
        dropped = self.stats.segments_dropped if self.stats is not None else 0
        if dropped > self.drops_seen:
            self.drops_seen, self.calm = dropped, 0
            if self.floor < self.floor_limit:
                self.floor += 1
                self.raised += 1
        elif self.floor > 0 and self.calm >= RELAX_AFTER:
            self.floor, self.calm = self.floor - 1, 0

    def state(self) -> dict:
        """What the stream's health reports: the current level and the seconds spent at each level so far."""
        return {**(self.current or {"level": "full", "tier": "full", "fps": self.max_fps}),
                "seconds": dict(self.seconds), "order": ORDER, "raised_by_drops": self.raised}

    def summary(self) -> dict:
        self._drain()
        return {"decisions": dict(self.decisions), "observed": self.observed,
                "lambda": round(self.controller.learner.lam, 3), "seconds_by_level": dict(self.seconds),
                "raised_by_drops": self.raised}
