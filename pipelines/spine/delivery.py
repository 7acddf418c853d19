"""A stream's records into its sink, in order, from a thread of the ingest actor.

The sink lives in the ingest actor's process (one process per stream, not two), so records no longer reach it
by an actor call that Ray starts when the record is ready; this thread does that: it writes each record the
moment its last graph call completes, while the ingest loop waits only when more than `max_inflight` records
are on their way (the stream's backpressure).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable


class Delivery:
    """Writes each queued record (an ObjectRef of a `Second`) with `write`, in the order queued."""

    def __init__(self, write: Callable[[object], object], max_inflight: int):
        self._write = write
        self._max = max_inflight
        self._pending: deque = deque()
        self._cond = threading.Condition()
        self._error: BaseException | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="sink-delivery", daemon=True)
        self._thread.start()

    def put(self, ref, wait: bool = True) -> None:
        """Queue one record; with `wait`, block while more than `max_inflight` are unwritten and raise the first
        failure (a graph call that failed for good, or the sink's write)."""
        with self._cond:
            self._pending.append(ref)
            self._cond.notify_all()
            if not wait:
                return
            while len(self._pending) > self._max and self._error is None:
                self._cond.wait()
            if self._error is not None:
                raise self._error

    def close(self) -> None:
        """Wait until every queued record is written (those after a failure too); raise the first failure."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join()
        if self._error is not None:
            raise self._error

    def _run(self) -> None:
        import ray

        while True:
            with self._cond:
                while not self._pending and not self._closed:
                    self._cond.wait()
                if not self._pending:
                    return
                ref = self._pending[0]
            try:
                self._write(ray.get(ref))
            except BaseException as exc:  # raised to the ingest loop; the records after it are still written
                with self._cond:
                    self._error = self._error or exc
            with self._cond:
                self._pending.popleft()
                self._cond.notify_all()
