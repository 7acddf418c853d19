"""Access-log lines without credentials: uvicorn logs each request's full path, query included, so a key
sent as `?api_key=` (or a source URL with a password in a query) would be written to the log as it came."""

from __future__ import annotations

import logging
from urllib.parse import unquote_plus

from pipelines.media.redact import redact


def redacted(text: str) -> str:
    """`text` redacted, and read percent-decoded where that shows a credential: clients encode query values
    (`?source=rtsp%3A%2F%2Fadmin%3Apw%40cam`), which hides the URL's form from `redact`."""
    plain = redact(text)
    if "%" in text:
        decoded = unquote_plus(text)
        masked = redact(decoded)
        if masked != decoded:
            return masked
    return plain


class RedactingFilter(logging.Filter):
    """Passes every record, with its message arguments (the path among them) redacted."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(redacted(a) if isinstance(a, str) else a for a in record.args)
        elif isinstance(record.msg, str):
            record.msg = redacted(record.msg)
        return True


def install() -> None:
    """Redact uvicorn's access and error logs (idempotent; filters survive uvicorn's dictConfig)."""
    for name in ("uvicorn.access", "uvicorn.error"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactingFilter) for f in logger.filters):
            logger.addFilter(RedactingFilter())
