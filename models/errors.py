"""Error types and exit statuses (design: 0 = success, 2 = bad input, 1 = internal failure).

They sit at the bottom of the import graph and import nothing, so models, pipelines, the services and the
surfaces all raise and catch the same classes.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_BAD_INPUT = 2


class BadInput(Exception):
    """The user's input (file, URL, device, option) cannot be used; the message is a one-line reason."""


class StreamFailed(BadInput):
    """A live source failed for good (never connected, or stopped sending past the reconnect budget)."""
