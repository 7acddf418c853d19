"""Access-log lines without credentials: uvicorn logs each request's full path, query included, so a key
sent as `?api_key=` (or a source URL with a password in a query) would be written to the log as it came."""

from __future__ import annotations

import logging

from pipelines.media.redact import redact


class RedactingFilter(logging.Filter):
    """Passes every record, with its message arguments (the path among them) redacted."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        elif isinstance(record.msg, str):
            record.msg = redact(record.msg)
        return True


def install() -> None:
    """Redact uvicorn's access and error logs (idempotent; filters survive uvicorn's dictConfig)."""
    for name in ("uvicorn.access", "uvicorn.error"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactingFilter) for f in logger.filters):
            logger.addFilter(RedactingFilter())
