"""Fair turns on a shared stage host: one call at a time, each stream's calls in its own order, and among the
streams with a call ready, the one that has had the least of the host's time goes first.

Why: a stage host serves every stream. A stream whose seconds cost more than its share (a busy scene, a burst
after a network stall) would otherwise put its calls ahead of everyone's in the host's queue. Here it waits
for its own calls instead: its ingest falls behind and drops *its* oldest seconds (counted in its health and
metrics), while a light stream waits at most for the one call running when its call arrives.

Each call names its stream and its place in that stream (`seq`, the second's number; the stream's `finish`
comes last). Ray hands a threaded actor's calls over as their arguments become ready, which may be out of
order by a hair, so a call waits for its stream's earlier ones; one that never comes (its upstream call
failed) is given up after `gap_s`. Time is counted as in start-time fair queuing: a stream that was idle
starts again from the current virtual time, not from the credit it saved while idle.

Batches across streams: when a call's turn comes and other streams' calls are ready too, `prefetch` (if the
host has one) gets the batch inputs of all of them (this call's first), so a model that takes batches runs
once for the cohort (the detector on each stream's key frame); each call still runs in its own turn and finds
its result computed. Only calls that are next in their stream's order join, so no stream's order changes.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
BATCHES_KEPT = 100_000


class FairTurns:
    def __init__(self, gap_s: float = 30.0, prefetch: Callable[[list], None] | None = None, max_batch: int = 8):
        self.gap_s = gap_s
        self.prefetch = prefetch  # called with the ready calls' batch inputs, the running call's first
        self.max_batch = max_batch
        # the size of each cohort prefetched (for tests and the benchmark), the newest BATCHES_KEPT: a host runs for days
        self.batches: deque[int] = deque(maxlen=BATCHES_KEPT)
        self._cond = threading.Condition()
        self._busy: dict[str, float] = {}  # host seconds each stream has had, on the virtual clock
        self._next: dict[str, int] = {}  # the seq each stream runs next
        self._waiting: dict[str, dict[int, tuple]] = {}  # stream -> token -> (seq, arrival, batch input)
        self._tokens = itertools.count()
        self._clock = 0.0  # the virtual time of the last call started
        self._running = False

    def run(self, stream: str, seq: int | None, fn: Callable[[], T], batch_input: Callable[[], object] | None = None
            ) -> T:
        """`fn()` in `stream`'s turn. `seq` None: a call outside the stream's order (start-up, close), which
        goes ahead of the ordered ones. `batch_input()`: what this call would hand a batched model (None: nothing)."""
        with self._cond:
            token = next(self._tokens)
            waiting = self._waiting.setdefault(stream, {})
            if not waiting:
                self._busy[stream] = max(self._busy.get(stream, 0.0), self._clock)
            waiting[token] = (seq, time.monotonic(), batch_input)
            while self._running or self._pick() != token:
                self._cond.wait(timeout=min(1.0, self.gap_s))
            self._running = True
            del waiting[token]
            self._clock = self._busy[stream]
            cohort = self._cohort(stream) if self.prefetch is not None and batch_input is not None else []
        if cohort:
            self._prefetch([(stream, batch_input), *cohort])
        t0 = time.perf_counter()
        try:
            return fn()
        finally:
            with self._cond:
                self._running = False
                self._busy[stream] = self._busy.get(stream, 0.0) + time.perf_counter() - t0
                if seq is not None:
                    self._next[stream] = max(self._next.get(stream, 0), seq + 1)
                if not self._waiting.get(stream):
                    self._waiting.pop(stream, None)
                self._cond.notify_all()

    def _cohort(self, running: str) -> list[tuple[str, Callable[[], object]]]:
        """Other streams' calls that are next in their order and could share a batch with the running one."""
        ready = []
        for stream, waiting in self._waiting.items():
            if stream == running or not waiting:
                continue
            seq, arrived, batch_input = min(waiting.values(), key=lambda v: (v[0] is not None, v[0] or 0))
            expected = self._next.get(stream)
            if seq is None or batch_input is None or (expected is not None and seq > expected):
                continue
            ready.append((self._busy.get(stream, 0.0), arrived, stream, batch_input))
        ready.sort(key=lambda r: r[:2])
        return [(stream, batch_input) for _, _, stream, batch_input in ready[: self.max_batch - 1]]

    def _prefetch(self, cohort: list[tuple[str, Callable[[], object]]]) -> None:
        """One batched model call for the cohort; its time is shared out to the streams that take part."""
        t0 = time.perf_counter()
        try:
            inputs = [x for x in (batch_input() for _, batch_input in cohort) if x is not None]
            if len(inputs) > 1:
                self.prefetch(inputs)
                self.batches.append(len(inputs))
        except Exception:  # noqa: BLE001  (each call then computes its own, and reports its own error)
            pass
        share = (time.perf_counter() - t0) / len(cohort)
        with self._cond:
            for stream, _ in cohort:
                self._busy[stream] = self._busy.get(stream, 0.0) + share

    def _pick(self) -> int | None:
        """The token whose turn it is, or None while every waiting call waits for an earlier one."""
        now = time.monotonic()
        best: tuple[float, float, int] | None = None
        for stream, waiting in self._waiting.items():
            if not waiting:
                continue
            token, (seq, arrived, _) = min(waiting.items(), key=lambda kv: (kv[1][0] is not None, kv[1][0] or 0))
            if seq is None:
                return token
            expected = self._next.get(stream)
            if expected is not None and seq > expected and now - arrived < self.gap_s:
                continue  # an earlier call of this stream is still on its way
            key = (self._busy.get(stream, 0.0), arrived, token)
            if best is None or key < best:
                best = key
        return None if best is None else best[2]

    def start(self, stream: str) -> None:
        """A new stream: its calls begin at seq 0 (whichever arrives first). A stream a host never saw start (the
        host restarted under it) takes its calls as they come."""
        with self._cond:
            self._next.setdefault(stream, 0)

    def forget(self, stream: str) -> None:
        """Drop what is kept about a stream that ended."""
        with self._cond:
            self._busy.pop(stream, None)
            self._next.pop(stream, None)
