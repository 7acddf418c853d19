"""What live streams write in the store, kept for a number of days: a camera writes rows for as long as it runs
(every event, transcript line, alert, moment, line crossing and zone event, and review cards with pictures), and
the disk would fill. A `RowPruner` thread deletes what is older than `--keep-days`, once at start and then every
hour, with the finished stream jobs last updated before then and their recordings. Uploads and batch jobs stay
until their user deletes them."""

from __future__ import annotations

import logging
import shutil
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from app.services.disk import no_space_reason
from app.services.recordings import recording_dir

if TYPE_CHECKING:
    from pipelines.sinks.store import Store

log = logging.getLogger("foresight.retention")
DAY_S = 86_400.0
EVERY_S = 3_600.0  # between rounds: rows are kept for days, so an hour late is nothing


class RowPruner:
    """Deletes what the jobs of `kind` wrote more than `keep_days` ago, at start and every `every_s` seconds,
    on its own thread (`close` stops it). A round that fails (a locked or full disk) is logged and the next
    one tries again."""

    def __init__(self, store: Store, kind: str, keep_days: float, recordings: Path | None = None,
                 every_s: float = EVERY_S):
        if not keep_days > 0:
            raise ValueError("a row pruner needs a positive number of days")
        self.store, self.kind, self.keep_s = store, kind, keep_days * DAY_S
        self.recordings, self.every_s = recordings, every_s
        self.deleted: dict[str, int] = {}  # every round's counts, summed (for the log and the tests)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"prune-{kind}", daemon=True)

    @classmethod
    def start_for(cls, store: Store, kind: str, keep_days: float, recordings: Path | None = None) -> RowPruner | None:
        """A started pruner, or None when everything is kept (`keep_days` 0)."""
        if keep_days <= 0:
            return None
        pruner = cls(store, kind, keep_days, recordings)
        pruner._thread.start()
        return pruner

    def prune(self, now: float | None = None) -> dict[str, int]:
        """One round: delete what is older than `keep_days` before `now`; returns the counts per table."""
        counts, jobs = self.store.prune_stream_rows(self.kind, (now or time.time()) - self.keep_s)
        for job_id in jobs:  # a deleted job's recording goes with it
            folder = recording_dir(self.recordings, job_id) if self.recordings is not None else None
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)
        for table, n in counts.items():
            self.deleted[table] = self.deleted.get(table, 0) + n
        if any(counts.values()):
            log.info("kept %g days of %s: deleted %s", self.keep_s / DAY_S, self.kind,
                     ", ".join(f"{n} {table}" for table, n in counts.items() if n))
        return counts

    def _run(self) -> None:
        while True:
            try:
                self.prune()
            except Exception as exc:  # the store is shared: a busy or full disk waits for the next round
                log.warning("pruning %s rows failed (%s); trying again in %.0f s", self.kind,
                            no_space_reason(exc) or repr(exc), self.every_s)
            if self._stop.wait(self.every_s):
                return

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
