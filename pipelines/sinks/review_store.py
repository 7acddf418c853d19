"""The review feed's table and its SQL (`pipelines.sinks.review` makes the cards): a mixin of `Store`, on its
connection, lock and transaction helper, so the store module keeps every other table.

Cards are kept apart from a job's result rows: saving a result replaces those, never the cards or whether
someone reviewed them.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable

from pipelines.sinks.review import COOLDOWN_S, Card, merges

REVIEW_SCHEMA = """
CREATE TABLE IF NOT EXISTS review (
    id INTEGER PRIMARY KEY, job_id TEXT NOT NULL, source TEXT NOT NULL, kind TEXT NOT NULL, key TEXT NOT NULL,
    title TEXT NOT NULL, why TEXT NOT NULL, severity TEXT, time REAL NOT NULL, last_time REAL NOT NULL,
    wall_time REAL NOT NULL, last_wall REAL NOT NULL, count INTEGER NOT NULL DEFAULT 1,
    reviewed INTEGER NOT NULL DEFAULT 0, reviewed_at REAL, thumbnail BLOB
);
CREATE INDEX IF NOT EXISTS review_repeat ON review(job_id, kind, key, last_time);
CREATE INDEX IF NOT EXISTS review_wall ON review(wall_time);
"""
# everything but the thumbnail, which has its own method
CARD_COLUMNS = ("id, job_id, source, kind, key, title, why, severity, time, last_time, wall_time, last_wall, "
                "count, reviewed, reviewed_at, thumbnail IS NOT NULL AS has_thumbnail")


class ReviewCards:
    """Store methods of the review feed: add or merge a card, list with filters and paging, mark reviewed."""

    db: sqlite3.Connection
    _lock: threading.RLock
    _tx: Callable

    def add_or_merge_card(self, card: Card, cooldown_s: float = COOLDOWN_S) -> tuple[int, bool]:
        """Keep `card`, or merge it into the latest unreviewed card of the same job, kind and key when that
        one fired within `cooldown_s` of stream time (`review.merges`), in one transaction. Sets `card.id`
        (and `card.count` on a merge); returns `(id, merged)`."""

        def write(db: sqlite3.Connection) -> tuple[int, bool]:
            row = db.execute("SELECT id, job_id, kind, key, last_time, reviewed, count FROM review "
                             "WHERE job_id=? AND kind=? AND key=? ORDER BY last_time DESC, id DESC LIMIT 1",
                             (card.job_id, card.kind, card.key)).fetchone()
            if row is not None and merges(dict(row), card, cooldown_s):
                db.execute("UPDATE review SET count=count+1, last_time=MAX(last_time, ?), "
                           "last_wall=MAX(last_wall, ?) WHERE id=?", (card.time, card.wall_time, row["id"]))
                card.count = int(row["count"]) + 1
                return int(row["id"]), True
            cur = db.execute(
                "INSERT INTO review (job_id, source, kind, key, title, why, severity, time, last_time, wall_time, "
                "last_wall, count, thumbnail) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (card.job_id, card.source, card.kind, card.key, card.title, card.why, card.severity, card.time,
                 card.last_time, card.wall_time, card.last_wall, card.count, card.thumbnail))
            return int(cur.lastrowid), False

        card.id, merged = self._tx(write)
        return card.id, merged

    @staticmethod
    def _where(kind: str | None, source: str | None, reviewed: bool | None,
               job_id: str | None) -> tuple[str, list]:
        clauses, args = [], []
        for column, value in (("kind", kind), ("source", source), ("job_id", job_id)):
            if value is not None:
                clauses.append(f"{column}=?")
                args.append(value)
        if reviewed is not None:
            clauses.append("reviewed=?")
            args.append(int(reviewed))
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", args

    def review_cards(self, kind: str | None = None, source: str | None = None, reviewed: bool | None = None,
                     job_id: str | None = None, limit: int = 50, offset: int = 0) -> list[dict]:
        """Cards matching every filter given, newest first (by the wall time of their first firing)."""
        where, args = self._where(kind, source, reviewed, job_id)
        with self._lock:
            rows = self.db.execute(f"SELECT {CARD_COLUMNS} FROM review{where} ORDER BY wall_time DESC, id DESC "
                                   "LIMIT ? OFFSET ?", (*args, int(limit), int(offset))).fetchall()
        return [_card(r) for r in rows]

    def count_cards(self, kind: str | None = None, source: str | None = None, reviewed: bool | None = None,
                    job_id: str | None = None) -> int:
        where, args = self._where(kind, source, reviewed, job_id)
        with self._lock:
            return int(self.db.execute(f"SELECT COUNT(*) FROM review{where}", args).fetchone()[0])

    def review_card(self, card_id: int) -> dict | None:
        with self._lock:
            row = self.db.execute(f"SELECT {CARD_COLUMNS} FROM review WHERE id=?", (int(card_id),)).fetchone()
        return _card(row) if row else None

    def review_sources(self) -> list[str]:
        """Every source (camera) that has cards, for the feed's camera filter."""
        with self._lock:
            return [r[0] for r in self.db.execute("SELECT DISTINCT source FROM review ORDER BY source")]

    def set_reviewed(self, card_id: int, reviewed: bool = True) -> bool:
        """Mark a card reviewed (or not again); False if there is no such card."""
        cur = self._tx(lambda db: db.execute("UPDATE review SET reviewed=?, reviewed_at=? WHERE id=?",
                                             (int(reviewed), time.time() if reviewed else None, int(card_id))))
        return cur.rowcount > 0

    def card_thumbnail(self, card_id: int) -> bytes | None:
        with self._lock:
            row = self.db.execute("SELECT thumbnail FROM review WHERE id=?", (int(card_id),)).fetchone()
        return bytes(row[0]) if row and row[0] is not None else None


def _card(row: sqlite3.Row) -> dict:
    card = dict(row)
    card["reviewed"] = bool(card["reviewed"])
    card["has_thumbnail"] = bool(card["has_thumbnail"])
    return card
