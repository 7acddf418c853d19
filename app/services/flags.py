"""One mechanism for checking command-line values: argparse `type=` validators (they check config-file values
too, through `settings.parse_args`) and a parser whose errors are one line on stderr with exit status 2."""

from __future__ import annotations

import argparse
import math
import sys
from urllib.parse import urlsplit


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad value is one line on stderr (exit 2), not the usage block and a traceback."""

    def error(self, message: str):  # noqa: D102 - argparse's hook
        print(f"{self.prog.split()[0]}: error: {' '.join(message.split())} (usage: {self.prog} --help)", file=sys.stderr)
        sys.exit(2)


def number(lo: float = 0.0, hi: float = math.inf, *, lo_open: bool = True, integer: bool = False):
    """A `type=` for a finite number in (lo, hi] (`lo_open=False`: [lo, hi]); refuses nan, inf and negatives."""
    what = "a whole number" if integer else "a number"
    span = f"{'(' if lo_open else '['}{lo:g}, {hi:g}{']' if hi < math.inf else ')'}"

    def check(text) -> float | int:
        try:
            value = int(text) if integer else float(text)
        except (TypeError, ValueError):
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        if not math.isfinite(value) or value < lo or (lo_open and value == lo) or value > hi:
            raise argparse.ArgumentTypeError(f"{text!r} must be {what} in {span}")
        return value

    check.__name__ = "integer" if integer else "number"
    return check


def port(text) -> int:
    """A TCP port, 1 to 65535."""
    return number(1, 65535, lo_open=False, integer=True)(text)


def http_url(text) -> str:
    """An http:// or https:// URL with a host (never file://, ftp:// and the like)."""
    parts = urlsplit(str(text))
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(f"{str(text)[:80]!r} is not an http:// or https:// URL")
    return str(text)
