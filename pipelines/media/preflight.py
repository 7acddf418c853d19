"""Checks a source before anything heavy starts (Ray, model loading), so bad input fails in seconds.

- files (and plain HTTP downloads): opened with PyAV and read until a few packets decode; a file whose first
  packets are mostly corrupt (a valid header over garbage) is refused;
- RTSP / HLS / HTTP: the host is resolved and a TCP connection to its port is made (`connect_timeout_s`),
  so a refused or unreachable URL is a one-line BadInput at once, not after the reconnect policy's retries;
- devices: the node must exist (checked by `parse_source`).

Only light modules are imported here (PyAV, sockets), so the CLI can call it before importing the pipeline.
"""

from __future__ import annotations

import errno
import socket
from urllib.parse import urlsplit

from models.errors import BadInput
from pipelines.media.sources import CAMERA_FORMATS, SourceKind, SourceSpec, media_streams, open_container

DEFAULT_PORTS = {"rtsp": 554, "rtsps": 322, "http": 80, "https": 443}
CONNECT_TIMEOUT_S = 2.5  # a refused or unreachable URL must fail within 3 s
PROBE_PACKETS = 200  # packets read at most while looking for decodable frames
GOOD_ENOUGH = 64  # packets that decode to a frame (about 1.5 s of media): enough to call the file readable


def check_source(spec: SourceSpec, open_timeout_s: float = 10.0, connect_timeout_s: float = CONNECT_TIMEOUT_S,
                 network: bool = True) -> None:
    """Raise BadInput with a one-line reason if `spec` cannot be read; return quietly otherwise.

    `network=False` (`--retry`: a camera expected to come up late) skips the reachability check of live URLs.
    """
    if spec.live and not network:
        return
    if spec.kind in (SourceKind.RTSP, SourceKind.HTTP, SourceKind.HLS):
        check_reachable(spec, connect_timeout_s)
    if not spec.live and spec.kind in (SourceKind.FILE, SourceKind.HTTP):
        probe(spec, open_timeout_s)


def check_reachable(spec: SourceSpec, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Resolve the URL's host and open (then close) a TCP connection to its port."""
    parts = urlsplit(spec.uri)
    host = parts.hostname
    if not host:
        raise BadInput(f"{spec.name}: no host in the URL")
    try:
        port = parts.port or DEFAULT_PORTS.get(parts.scheme.lower())
    except ValueError:
        raise BadInput(f"{spec.name}: bad port in the URL") from None
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        raise BadInput(f"{spec.name}: cannot resolve host {host}") from None
    except UnicodeError:
        raise BadInput(f"{spec.name}: bad host name") from None
    reason = "unreachable"
    for family, kind, proto, _, addr in infos:
        with socket.socket(family, kind, proto) as sock:
            sock.settimeout(timeout_s)
            try:
                sock.connect(addr)
                return
            except ConnectionRefusedError:
                reason = "connection refused"
            except TimeoutError:
                reason = f"unreachable (no answer within {timeout_s:g} s)"
            except OSError as exc:
                reason = ("unreachable" if exc.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH)
                          else " ".join((exc.strerror or str(exc)).split())[:120])
    raise BadInput(f"{spec.name}: {reason}")


def probe(spec: SourceSpec, timeout_s: float = 10.0) -> None:
    """Open `spec` and decode until one audio or video frame comes out; BadInput with the reason if none does."""
    import av

    container = open_container(spec, timeout_s, timeout_s, camera_clock=False)
    try:
        streams = [s for s in media_streams(container) if s is not None]
        if not streams:
            raise BadInput(f"{spec.name}: no video or audio stream in the source")
        # an HTTP camera's endless stream, read in real time: one picture that decodes shows it is readable
        enough = 1 if container.format.name in CAMERA_FORMATS else GOOD_ENOUGH
        error, good, bad = None, 0, 0
        for n, packet in enumerate(container.demux(streams)):
            if n >= PROBE_PACKETS or good >= enough:
                break
            try:
                good += bool(packet.decode())
            except av.error.FFmpegError as exc:
                error, bad = exc, bad + 1
        detail = f" ({' '.join(str(error).split())[:160]})" if error is not None else ""
        if good == 0:
            raise BadInput(f"{spec.name}: no decodable audio or video{detail}")
        if bad > 2 * good:  # a valid header over garbage: refuse now, not after starting the whole stack
            raise BadInput(f"{spec.name}: mostly undecodable: {bad} of the first {good + bad} packets are corrupt"
                           f"{detail}")
    except av.error.FFmpegError as exc:
        raise BadInput(f"{spec.name}: cannot decode ({' '.join(str(exc).split())[:160]})") from None
    finally:
        container.close()
