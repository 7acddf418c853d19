"""Disk and database exhaustion: which errors mean "no space" (SQLite's `database or disk is full`, ENOSPC,
EDQUOT, EROFS), and the server's memory of the last one, so `/healthz` can say "degraded" while it lasts and
a worker thread records the failure instead of dying."""

from __future__ import annotations

import errno
import sqlite3
import threading

NO_SPACE_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)


def no_space_reason(exc: BaseException) -> str | None:
    """A one-line reason when `exc` means the disk or the database cannot take more writes, else None."""
    if isinstance(exc, sqlite3.OperationalError) and "full" in str(exc).lower():
        return f"database or disk is full ({exc})"
    if isinstance(exc, OSError) and exc.errno in NO_SPACE_ERRNOS:
        return f"disk full or read-only ({errno.errorcode.get(exc.errno, exc.errno)})"
    return None


class DiskHealth:
    """The last disk/database-full failure, until a write succeeds again."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reason: str | None = None

    def failed(self, reason: str) -> None:
        with self._lock:
            self.reason = reason

    def ok(self) -> None:
        with self._lock:
            self.reason = None
