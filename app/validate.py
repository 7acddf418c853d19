"""argparse `type=` validators for the number, path, URL and address flags of analyze, batch and serve, plus the
pre-flight checks that need more than one flag (a bindable host:port, a writable folder). They run while the
command line is parsed, before any model loads or Ray starts, so bad input exits 2 with one line in a second
(the exit-code contract: 0 ok, 2 bad input, 1 internal failure)."""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import json
import math
import os
import re
import socket
import sys
from pathlib import Path
from urllib.parse import urlsplit

from models.errors import EXIT_BAD_INPUT, BadInput

ZIP_MAGIC = b"PK\x03\x04"  # torch.save's default (zip) format: every project checkpoint starts with it
_HOST_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)$")


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr (`prog: error: ...`) and exit 2; subparsers made
    by `add_subparsers` are of the same class."""

    def error(self, message: str):
        print(f"{self.prog.split()[0]}: error: {message} (usage: {self.prog} --help)", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)


def _number(text, kind=float) -> float:
    try:
        value = kind(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def positive_float(text) -> float:
    """A finite number > 0 (refuses nan, inf, 0 and negatives)."""
    value = _number(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive number")
    return value


def nonnegative_float(text) -> float:
    """A finite number >= 0."""
    value = _number(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be 0 or a positive number")
    return value


def unit_interval(text) -> float:
    """A finite number in [0, 1] (a probability)."""
    value = _number(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be between 0 and 1")
    return value


def positive_int(text) -> int:
    """A whole number >= 1."""
    value = _number(text, int)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be a whole number, 1 or more")
    return value


def port(text) -> int:
    """A TCP port, 1-65535, or 0 for any free port."""
    value = _number(text, int)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a TCP port (1-65535, or 0 for any free port)")
    return value


def host(text: str) -> str:
    """An IP address literal or a syntactically valid host name (RFC 1123 labels); an all-numeric dotted name
    such as 256.1.1.1 is a bad IP address, not a name."""
    with contextlib.suppress(ValueError):
        return str(ipaddress.ip_address(text.strip("[]")))
    labels = text.rstrip(".").split(".")
    if (not text or len(text) > 253 or not all(_HOST_LABEL.match(label) for label in labels)
            or all(label.isdigit() for label in labels)):
        raise argparse.ArgumentTypeError(f"{text!r} is not an IP address or host name")
    return text


def http_url(text: str) -> str:
    """An http:// or https:// URL with a host."""
    parts = urlsplit(text)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(f"{text[:80]!r} is not an http(s):// URL")
    return text


def readable_file(text: str) -> str:
    """An existing file this process can read."""
    path = Path(text)
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"{text}: no such file")
    if not os.access(path, os.R_OK):
        raise argparse.ArgumentTypeError(f"{text}: not readable")
    return text


def path_arg(text: str) -> str:
    """A path that names something: an empty one would be the current folder."""
    if not str(text).strip():
        raise argparse.ArgumentTypeError("is empty (name a file or folder)")
    return str(text)


def checkpoint_file(text: str) -> str:
    """A readable torch checkpoint (the zip format `torch.save` writes), checked by its first bytes only."""
    readable_file(text)
    try:
        with open(text, "rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"{text}: cannot read it ({exc.strerror or exc})") from None
    if head != ZIP_MAGIC:
        raise argparse.ArgumentTypeError(f"{text}: not a torch checkpoint (a file torch.save wrote)")
    return text


def escalation_policy(text: str) -> str:
    """'robust' (the shipped policy) or a readable JSON object file."""
    if text == "robust":
        return text
    readable_file(text)
    try:
        with open(text, "rb") as fh:
            ok = isinstance(json.loads(fh.read(4 * 1024 * 1024)), dict)
    except (OSError, ValueError, RecursionError):
        ok = False
    if not ok:
        raise argparse.ArgumentTypeError(f"{text}: say 'robust' or give a policy JSON file")
    return text


def check_bindable(address: str, number: int) -> None:
    """Bind (and release) a socket on address:port so a port in use or an address not on this machine fails
    before the app and Ray start; BadInput with the reason."""
    try:
        infos = socket.getaddrinfo(address, number, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as exc:
        raise BadInput(f"--host {address}: cannot resolve it ({exc})") from None
    family, kind, proto, _, sockaddr = infos[0]
    try:
        with socket.socket(family, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(sockaddr)
    except OSError as exc:
        raise BadInput(f"cannot listen on {address}:{number} ({exc.strerror or exc})") from None
