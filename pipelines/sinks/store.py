"""SQLite storage (WAL mode) for sources, jobs, events, transcripts, moments and alerts, and the grounding
index's per-second features and coarse windows (`pipelines.sinks.grounding_index`). All of Foresight's SQL is
here, behind methods, but for the review feed's cards (`pipelines.sinks.review_store`) and the pruning of old
stream rows (`pipelines.sinks.row_pruning`), mixins on the same connection.

A job's rows are replaced in one transaction when its result is saved, so a process killed at any point
leaves either the previous state or the new one, never half a result: that is what makes batch resumable. A
live stream's rows are written as they close and kept; `prune_stream_rows` deletes the old ones.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable
from pathlib import Path

from pipelines.sinks.review_store import REVIEW_SCHEMA, ReviewCards
from pipelines.sinks.row_pruning import ROW_TABLES, StreamRowPruning

# "stopped": a live stream its user stopped (its result is saved as for "done")
JOB_STATUSES = ("queued", "running", "done", "stopped", "failed")
JOBS_TABLE = """CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY, kind TEXT NOT NULL, source TEXT NOT NULL, key TEXT,
    status TEXT NOT NULL CHECK (status IN ({statuses})),
    progress REAL NOT NULL DEFAULT 0, error TEXT, result_json TEXT,
    created_at REAL NOT NULL, updated_at REAL NOT NULL
);""".format(statuses=", ".join(f"'{s}'" for s in JOB_STATUSES))
SCHEMA = """
CREATE TABLE IF NOT EXISTS sources (
    id TEXT PRIMARY KEY, uri TEXT NOT NULL, kind TEXT NOT NULL, created_at REAL NOT NULL
);
{jobs}
CREATE INDEX IF NOT EXISTS jobs_key ON jobs(key);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY, job_id TEXT NOT NULL, source TEXT NOT NULL, label TEXT NOT NULL,
    modality TEXT NOT NULL, start REAL NOT NULL, "end" REAL NOT NULL, confidence REAL NOT NULL,
    model TEXT, taxonomy TEXT, wall REAL
);
CREATE TABLE IF NOT EXISTS transcript (
    id INTEGER PRIMARY KEY, job_id TEXT NOT NULL, source TEXT NOT NULL, start REAL NOT NULL,
    "end" REAL NOT NULL, text TEXT NOT NULL, wall REAL
);
CREATE TABLE IF NOT EXISTS moments (
    id INTEGER PRIMARY KEY, job_id TEXT NOT NULL, source TEXT NOT NULL, query TEXT NOT NULL,
    start REAL NOT NULL, "end" REAL NOT NULL, score REAL NOT NULL, weights_json TEXT NOT NULL, wall REAL
);
CREATE TABLE IF NOT EXISTS alerts (
    id INTEGER PRIMARY KEY, job_id TEXT NOT NULL, source TEXT NOT NULL, time REAL NOT NULL,
    severity TEXT NOT NULL, rule TEXT NOT NULL, reason TEXT NOT NULL, lead_time_s REAL,
    evidence_json TEXT NOT NULL, wall REAL
);
CREATE TABLE IF NOT EXISTS grounding_clips (
    source_id TEXT PRIMARY KEY, num_seconds INTEGER NOT NULL, transcript TEXT NOT NULL, events TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS grounding_seconds (
    source_id TEXT NOT NULL, t INTEGER NOT NULL, visual BLOB, audio BLOB, speech BLOB,
    mask INTEGER NOT NULL, text TEXT NOT NULL DEFAULT '', PRIMARY KEY (source_id, t)
);
CREATE TABLE IF NOT EXISTS grounding_windows (
    source_id TEXT NOT NULL, start INTEGER NOT NULL, end INTEGER NOT NULL, vec BLOB NOT NULL,
    present INTEGER NOT NULL, PRIMARY KEY (source_id, start)
);
CREATE TABLE IF NOT EXISTS grounding_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS stream_restarts (
    stream_id TEXT PRIMARY KEY, kind TEXT NOT NULL, source TEXT NOT NULL, rtsp_transport TEXT NOT NULL,
    job_id TEXT NOT NULL, restarts INTEGER NOT NULL DEFAULT 0, created_at REAL NOT NULL, settings TEXT
);
""".replace("{jobs}", JOBS_TABLE)
GROUNDING_TABLES = ("grounding_clips", "grounding_seconds", "grounding_windows")
SCHEMA += "".join(f"CREATE INDEX IF NOT EXISTS {t}_job ON {t}(job_id);\n" for t in ROW_TABLES)


class Store(ReviewCards, StreamRowPruning):
    """A thread-safe handle on one SQLite database file."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # owner-only: persistent streams keep their source, credentials included (":memory:" is no file at all)
        if str(path) != ":memory:" and not self.path.exists():
            os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
        self._lock = threading.RLock()
        self.db = sqlite3.connect(str(self.path), timeout=30.0, check_same_thread=False, isolation_level=None)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA busy_timeout=30000")
        _widen_job_statuses(self.db)
        self.db.executescript(SCHEMA + REVIEW_SCHEMA)  # an older database gains the tables it lacks
        _add_missing_columns(self.db, "events", {"model": "TEXT", "taxonomy": "TEXT"})
        for table in ROW_TABLES:  # when each row was written, by the clock (`prune_stream_rows`)
            _add_missing_columns(self.db, table, {"wall": "REAL"})
        _add_missing_columns(self.db, "stream_restarts", {"settings": "TEXT"})

    def close(self) -> None:
        with self._lock:
            self.db.close()

    def _tx(self, fn):
        with self._lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                out = fn(self.db)
            except BaseException:
                if self.db.in_transaction:  # SQLite has rolled back itself on SQLITE_FULL: keep that error
                    self.db.execute("ROLLBACK")
                raise
            try:
                self.db.execute("COMMIT")
            except BaseException:
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")
                raise
            return out

    # -- sources and jobs --------------------------------------------------------------------------------
    def add_source(self, uri: str, kind: str, source_id: str | None = None) -> str:
        sid = source_id or uuid.uuid4().hex[:12]
        self._tx(lambda db: db.execute("INSERT OR REPLACE INTO sources VALUES (?,?,?,?)", (sid, uri, kind, time.time())))
        return sid

    def create_job(self, kind: str, source: str, key: str | None = None, job_id: str | None = None) -> str:
        jid = job_id or uuid.uuid4().hex
        now = time.time()
        self._tx(lambda db: db.execute(
            "INSERT INTO jobs (id, kind, source, key, status, progress, created_at, updated_at) "
            "VALUES (?,?,?,?,'queued',0,?,?)", (jid, kind, source, key, now, now)))
        return jid

    def job(self, job_id: str) -> dict | None:
        with self._lock:
            row = self.db.execute("SELECT * FROM jobs WHERE id=?", (job_id,)).fetchone()
        return dict(row) if row else None

    def job_by_key(self, key: str) -> dict | None:
        with self._lock:
            row = self.db.execute("SELECT * FROM jobs WHERE key=? ORDER BY updated_at DESC LIMIT 1", (key,)).fetchone()
        return dict(row) if row else None

    def update_job(self, job_id: str, *, status: str | None = None, progress: float | None = None,
                   error: str | None = None) -> None:
        sets, args = ["updated_at=?"], [time.time()]
        for col, val in (("status", status), ("progress", progress), ("error", error)):
            if val is not None:
                sets.append(f"{col}=?")
                args.append(val)
        self._tx(lambda db: db.execute(f"UPDATE jobs SET {', '.join(sets)} WHERE id=?", (*args, job_id)))

    def unfinished_job_ids(self, kind: str) -> list[str]:
        """Jobs of `kind` still queued or running."""
        with self._lock:
            return [r[0] for r in self.db.execute(
                "SELECT id FROM jobs WHERE status IN ('queued', 'running') AND kind=?", (kind,))]

    # -- persistent streams: what a restarted server reconnects ------------------------------------------
    def remember_stream(self, stream_id: str, kind: str, source: str, rtsp_transport: str, job_id: str,
                        restarts: int = 0, settings: dict | None = None) -> None:
        """Keep a persistent stream's source (unredacted: it must be reopened) while the stream runs, and the
        `settings` it is to come back with (its watches, zones and lines)."""
        row = (stream_id, kind, source, rtsp_transport, job_id, restarts, time.time(), json.dumps(settings or {}))
        self._tx(lambda db: db.execute(
            "INSERT OR REPLACE INTO stream_restarts (stream_id, kind, source, rtsp_transport, job_id, restarts, "
            "created_at, settings) VALUES (?,?,?,?,?,?,?,?)", row))

    def update_stream_settings(self, stream_id: str, settings: dict) -> None:
        """A persistent stream's settings changed while it runs (e.g. its watches): it comes back with these."""
        self._tx(lambda db: db.execute("UPDATE stream_restarts SET settings=? WHERE stream_id=?",
                                       (json.dumps(settings), stream_id)))

    def forget_stream(self, stream_id: str) -> None:
        self._tx(lambda db: db.execute("DELETE FROM stream_restarts WHERE stream_id=?", (stream_id,)))

    def persistent_streams(self, kind: str) -> list[dict]:
        """Streams of `kind` that were running when the last server stopped and are to be reconnected."""
        with self._lock:
            rows = [dict(r) for r in self.db.execute(
                "SELECT * FROM stream_restarts WHERE kind=? ORDER BY created_at", (kind,))]
        return [{**r, "settings": json.loads(r["settings"] or "{}")} for r in rows]

    def recent_jobs(self, limit: int = 50) -> list[dict]:
        """The latest jobs first, without their result JSON (for lists such as the dashboard's history)."""
        with self._lock:
            return [dict(r) for r in self.db.execute(
                "SELECT id, kind, source, status, progress, error, created_at, updated_at FROM jobs "
                "ORDER BY created_at DESC LIMIT ?", (limit,))]

    def count_jobs(self, statuses: Iterable[str]) -> int:
        statuses = list(statuses)
        with self._lock:
            q = f"SELECT COUNT(*) FROM jobs WHERE status IN ({','.join('?' * len(statuses))})"
            return int(self.db.execute(q, statuses).fetchone()[0])

    # -- results -------------------------------------------------------------------------------------------
    def save_result(self, job_id: str, result: dict, status: str = "done", rows_written: bool = False) -> None:
        """Mark the job `status` (done, or stopped for a live stream its user stopped) with `result`, and replace
        every row of `job_id` with the result's, atomically. `rows_written`: a stream's sink wrote each row as it
        closed (`append_rows`), so those rows stay: a live result keeps only its newest items
        (`results.LIVE_ITEMS`), and the line crossings and zone events are rows of their own."""
        if status not in ("done", "stopped"):
            raise ValueError(f"a saved result is done or stopped, not {status}")
        source = result.get("source", "")

        def write(db: sqlite3.Connection) -> None:
            if not rows_written:
                for table in ROW_TABLES:
                    db.execute(f"DELETE FROM {table} WHERE job_id=?", (job_id,))
                _insert_rows(db, job_id, source, result.get("events", []), result.get("transcript", []),
                             result.get("alerts", []), result.get("moments", []))
            db.execute("UPDATE jobs SET status=?, progress=1, error=NULL, result_json=?, updated_at=? "
                       "WHERE id=?", (status, json.dumps(result), time.time(), job_id))

        self._tx(write)

    def result(self, job_id: str) -> dict | None:
        job = self.job(job_id)
        if not job or not job["result_json"]:
            return None
        return json.loads(job["result_json"])

    def append_rows(self, job_id: str, source: str, events: list[dict], transcript: list[dict],
                    alerts: list[dict] | None = None, moments: list[dict] | None = None) -> None:
        """Incremental writes from a live sink (rows are final once written)."""
        if not events and not transcript and not alerts and not moments:
            return
        self._tx(lambda db: _insert_rows(db, job_id, source, events, transcript, alerts or [], moments or []))

    def rows(self, table: str, job_id: str) -> list[dict]:
        if table not in ROW_TABLES:
            raise ValueError(f"unknown table {table}")
        with self._lock:
            return [dict(r) for r in self.db.execute(f"SELECT * FROM {table} WHERE job_id=? ORDER BY id", (job_id,))]

    def text_rows(self, job_ids: list[str] | None = None) -> tuple[list[tuple], list[tuple]]:
        """Transcript rows `(job_id, source, text, start, end)` and event rows
        `(job_id, source, label, modality, start, end)` of the given jobs (None: all; an empty list: none)."""
        where, args = "", []
        if job_ids is not None:
            if not job_ids:
                return [], []
            where = f" WHERE job_id IN ({','.join('?' * len(job_ids))})"
            args = list(job_ids)
        with self._lock:
            speech = self.db.execute(f'SELECT job_id, source, text, start, "end" FROM transcript{where}', args).fetchall()
            events = self.db.execute(f'SELECT job_id, source, label, modality, start, "end" FROM events{where}',
                                     args).fetchall()
        return [tuple(r) for r in speech], [tuple(r) for r in events]

    # -- grounding index ---------------------------------------------------------------------------------
    def grounding_meta(self, key: str) -> str | None:
        with self._lock:
            row = self.db.execute("SELECT value FROM grounding_meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def set_grounding_meta(self, values: dict[str, str]) -> None:
        self._tx(lambda db: db.executemany("INSERT OR REPLACE INTO grounding_meta(key, value) VALUES (?, ?)",
                                           list(values.items())))

    def grounding_sources(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self.db.execute("SELECT source_id FROM grounding_clips ORDER BY source_id")]

    def grounding_owners(self, source_ids: Iterable[str]) -> dict[str, str]:
        """The job each indexed source came from, so search can name it (source id -> job id; one of no job is
        left out). An upload indexes its clip as `<name>#<first 8 of its job id>` (`app.services.jobs`), a batch
        file under its name (`app.services.batch`); of two jobs under one id, the newer replaced the other's."""
        owners: dict[str, str] = {}
        with self._lock:
            for sid in dict.fromkeys(source_ids):
                name, _, tail = sid.rpartition("#")
                row = None
                if name and len(tail) == 8 and all(c in "0123456789abcdef" for c in tail):  # GLOB-safe: the id index
                    row = self.db.execute("SELECT id FROM jobs WHERE id GLOB ? AND kind='upload' AND source=? "
                                          "ORDER BY updated_at DESC LIMIT 1", (tail + "*", name)).fetchone()
                row = row or self.db.execute("SELECT id FROM jobs WHERE kind='batch' AND source=? "
                                             "ORDER BY updated_at DESC LIMIT 1", (sid,)).fetchone()
                if row is not None:
                    owners[sid] = row[0]
        return owners

    def grounding_seconds_total(self) -> int:
        with self._lock:
            return int(self.db.execute("SELECT COALESCE(SUM(num_seconds), 0) FROM grounding_clips").fetchone()[0])

    def put_grounding_clip(self, source_id: str, num_seconds: int, transcript: list, events: list,
                           second_rows: list[tuple], window_rows: list[tuple]) -> None:
        """Replace a source's clip row, per-second rows and coarse windows, atomically."""

        def write(db: sqlite3.Connection) -> None:
            _delete_grounding(db, source_id)
            db.execute("INSERT INTO grounding_clips VALUES (?, ?, ?, ?)",
                       (source_id, num_seconds, json.dumps(transcript), json.dumps(events)))
            db.executemany("INSERT INTO grounding_seconds VALUES (?, ?, ?, ?, ?, ?, ?)", second_rows)
            db.executemany("INSERT INTO grounding_windows VALUES (?, ?, ?, ?, ?)", window_rows)

        self._tx(write)

    def remove_grounding_clip(self, source_id: str) -> None:
        self._tx(lambda db: _delete_grounding(db, source_id))

    def replace_grounding_windows(self, window_rows: list[tuple]) -> None:
        """Every source's coarse windows at once (after a model or window-layout change)."""

        def write(db: sqlite3.Connection) -> None:
            db.execute("DELETE FROM grounding_windows")
            db.executemany("INSERT INTO grounding_windows VALUES (?, ?, ?, ?, ?)", window_rows)

        self._tx(write)

    def grounding_clip(self, source_id: str) -> tuple[int, list, list] | None:
        """`(num_seconds, transcript, events)` of an indexed source, or None."""
        with self._lock:
            row = self.db.execute("SELECT num_seconds, transcript, events FROM grounding_clips WHERE source_id=?",
                                  (source_id,)).fetchone()
        return None if row is None else (int(row[0]), json.loads(row[1]), json.loads(row[2]))

    def grounding_seconds(self, source_id: str, start: int, end: int) -> list[tuple]:
        """`(visual, audio, speech, mask)` blobs of seconds `[start, end)` of a source, in order."""
        with self._lock:
            return [tuple(r) for r in self.db.execute(
                "SELECT visual, audio, speech, mask FROM grounding_seconds WHERE source_id=? AND t>=? AND t<? "
                "ORDER BY t", (source_id, start, end))]

    def grounding_windows(self) -> list[tuple]:
        """`(source_id, start, end, vec, present)` of every coarse window, by source and start."""
        with self._lock:
            return [tuple(r) for r in self.db.execute(
                "SELECT source_id, start, end, vec, present FROM grounding_windows ORDER BY source_id, start")]


def _delete_grounding(db: sqlite3.Connection, source_id: str) -> None:
    for table in GROUNDING_TABLES:
        db.execute(f"DELETE FROM {table} WHERE source_id=?", (source_id,))


def _widen_job_statuses(db: sqlite3.Connection) -> None:
    """Bring a jobs table written before "stopped" existed up to the schema: SQLite cannot change a CHECK
    constraint, so the table is rebuilt with its rows in one transaction."""
    def current() -> bool:
        row = db.execute("SELECT sql FROM sqlite_master WHERE type='table' AND name='jobs'").fetchone()
        return row is None or "'stopped'" in row[0]

    if current():
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        if current():  # another process upgraded it meanwhile
            db.execute("ROLLBACK")
            return
        columns = ", ".join(r[1] for r in db.execute("PRAGMA table_info(jobs)"))
        db.execute("ALTER TABLE jobs RENAME TO jobs_before_stopped")
        db.execute(JOBS_TABLE)
        db.execute(f"INSERT INTO jobs ({columns}) SELECT {columns} FROM jobs_before_stopped")
        db.execute("DROP TABLE jobs_before_stopped")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _add_missing_columns(db: sqlite3.Connection, table: str, columns: dict[str, str]) -> None:
    """Bring a database written by an older release up to the schema: add the columns it lacks."""
    have = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
    for name, kind in columns.items():
        if name not in have:
            db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")


def _insert_rows(db: sqlite3.Connection, job_id: str, source: str, events: list[dict], transcript: list[dict],
                 alerts: list[dict], moments: list[dict]) -> None:
    now = time.time()
    db.executemany('INSERT INTO events (job_id, source, label, modality, start, "end", confidence, model, taxonomy, '
                   "wall) VALUES (?,?,?,?,?,?,?,?,?,?)",
                   [(job_id, source, e["label"], e["modality"], e["start"], e["end"], e["confidence"],
                     e.get("source"), e.get("taxonomy"), now) for e in events])
    db.executemany('INSERT INTO transcript (job_id, source, start, "end", text, wall) VALUES (?,?,?,?,?,?)',
                   [(job_id, source, t["start"], t["end"], t["text"], now) for t in transcript])
    db.executemany("INSERT INTO alerts (job_id, source, time, severity, rule, reason, lead_time_s, "
                   "evidence_json, wall) VALUES (?,?,?,?,?,?,?,?,?)",
                   [(job_id, source, a["time"], a["severity"], a["rule"], a["reason"], a.get("lead_time_s"),
                     json.dumps(a.get("evidence", [])), now) for a in alerts])
    db.executemany('INSERT INTO moments (job_id, source, query, start, "end", score, weights_json, wall) '
                   "VALUES (?,?,?,?,?,?,?,?)",
                   [(job_id, source, m["query"], m["start"], m["end"], m["score"],
                     json.dumps(m.get("modality_weights", {})), now) for m in moments])
