"""Deleting what live streams wrote long ago (`--keep-days`): a mixin of `Store`, on its connection, lock and
transaction helper. The rows go a chunk per transaction with a pause between chunks, so a sink writing beside the
first prune of a store that ran for months (millions of rows) waits for a chunk, not for the whole prune, which
could pass SQLite's busy timeout and fail the sink's write."""

from __future__ import annotations

import time

ROW_TABLES = ("events", "transcript", "moments", "alerts")  # a job's rows, each table indexed by job
FINISHED = ("done", "stopped", "failed")  # the job statuses whose rows no sink writes any more
CHUNK = 20_000  # rows deleted per transaction: a few tens of milliseconds
# between two chunks: a writer waiting in SQLite's busy handler (which sleeps up to 100 ms between tries) gets in
PAUSE_S = 0.1


class StreamRowPruning:
    def prune_stream_rows(self, kind: str, before: float) -> tuple[dict[str, int], list[str]]:
        """Delete what the jobs of `kind` (live streams) wrote before the wall-clock time `before`: their rows
        and review cards, and the finished jobs last updated before it, whole. Returns the count deleted per
        table and the deleted jobs' ids. A row from before the `wall` column is dated by its job's start plus
        its stream time (never later than it was written)."""
        jobs = "SELECT id FROM jobs WHERE kind=?"
        counts = {}
        for table in ROW_TABLES:
            at = "time" if table == "alerts" else '"end"'
            counts[table] = self._delete_chunks(
                table, f"job_id IN ({jobs}) AND COALESCE(wall, (SELECT created_at FROM jobs "
                       f"WHERE jobs.id={table}.job_id) + {at}) < ?", (kind, before))
        counts["review"] = self._delete_chunks("review", f"job_id IN ({jobs}) AND last_wall<?", (kind, before))
        finished = f"{jobs} AND status IN ({','.join('?' * len(FINISHED))}) AND updated_at<?"
        args = (kind, *FINISHED, before)

        def drop_finished(db) -> list[str]:
            done = [r[0] for r in db.execute(finished, args)]
            for table in (*ROW_TABLES, "review"):  # their newer rows (none, normally) go with them
                counts[table] += db.execute(f"DELETE FROM {table} WHERE job_id IN ({finished})", args).rowcount
            db.execute(f"DELETE FROM jobs WHERE id IN ({finished})", args)
            return done

        done = self._tx(drop_finished)
        counts["jobs"] = len(done)
        return counts, done

    def _delete_chunks(self, table: str, where: str, args: tuple) -> int:
        """Delete the rows of `table` that match `where`, `CHUNK` to a transaction; the count deleted."""
        total = 0
        while True:
            n = self._tx(lambda db: db.execute(
                f"DELETE FROM {table} WHERE id IN (SELECT id FROM {table} WHERE {where} LIMIT {CHUNK})", args).rowcount)
            total += n
            if n < CHUNK:
                return total
            time.sleep(PAUSE_S)
