"""What to try when a source fails: the stored reason (from the ingest, the preflight check or the job row)
read for the few causes an operator can fix, each with one hint in words. What failed decides: a source that
has sent data (an outage) worked with this URL, so the hint is about the camera and the network, never the URL."""

from __future__ import annotations

import re

# (pattern on the lower-cased reason, hint); the first match wins
HINTS: list[tuple[str, str]] = [
    (r"400 bad request|\b461\b|unsupported transport",
     "the server refused this RTSP transport: if you chose TCP, try UDP (and the other way round)"),
    (r"\b404\b|not found", "the server has no stream at that path: check the part of the URL after the host"),
    (r"\b40[13]\b|unauthori[sz]ed|forbidden", "the camera wants credentials: put user:password@ before the host"),
    (r"connection refused", "nothing listens at that host and port: check the address and that the camera is on"),
    (r"did not come back within|did not come up within",
     "the source was away longer than the reconnect budget: check the camera and the network, then start it again"),
    (r"timed out|timeout|no route|unreachable|name or service not known|could not resolve",
     "no answer from that host: check the address and that this machine can reach it"),
    (r"interrupted: the server stopped", "the dashboard was restarted while this stream ran: start it again"),
    (r"no such file|no such device", "that device or file does not exist on the server"),
]


# After the source has sent data: (pattern, hint); then the generic one for any other reason
OUTAGE_HINTS: list[tuple[str, str]] = [
    (r"did not come back within",
     "the camera went away for longer than the reconnect budget: check its power and network, then start it again"),
    (r"\b40[13]\b|unauthori[sz]ed|forbidden",
     "the camera now refuses the credentials that worked before: check whether its password was changed"),
    (r"connection refused|source ended|\b404\b|not found",
     "the camera went away (it worked with this URL before): it is retried until it comes back; check that it is "
     "on and its stream server runs"),
]
OUTAGE_DEFAULT = ("the camera stopped sending (it worked with this URL before): it is retried until it comes back; "
                  "check its power and the network between it and this machine")


def failure_hint(reason: str | None, had_data: bool = False) -> str | None:
    """The hint for a failure `reason`, or None when the reason names no cause an operator can act on.
    `had_data`: the source had sent data before (an outage of a source that worked, not a wrong address)."""
    text = (reason or "").lower()
    if had_data:
        return next((hint for pattern, hint in OUTAGE_HINTS if re.search(pattern, text)), OUTAGE_DEFAULT)
    for pattern, hint in HINTS:
        if re.search(pattern, text):
            return hint
    return None
