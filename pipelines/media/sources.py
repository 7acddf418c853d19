"""Source specifications: what kind of input a user named, and how PyAV should open it.

Keeping the classification in one place means the CLI, REST API and dashboard all accept the same inputs
and give the same one-line errors for bad ones.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path

import av
import httpx

from models.errors import BadInput
from pipelines.media.guarded_io import GuardedHttp
from pipelines.media.policy import SourcePolicy, SourceRefused, ffmpeg_protocols
from pipelines.media.redact import redact
from pipelines.media.rtsp_guard import RtspRelay

VIDEO_EXTENSIONS = {".mp4", ".mkv", ".mov", ".avi", ".webm", ".ts", ".m4v", ".flv", ".mpg", ".mpeg", ".wmv", ".3gp"}
AUDIO_EXTENSIONS = {".wav", ".mp3", ".flac", ".ogg", ".oga", ".m4a", ".aac", ".opus"}
MEDIA_EXTENSIONS = VIDEO_EXTENSIONS | AUDIO_EXTENSIONS


class SourceKind(StrEnum):
    FILE = "file"
    DEVICE = "device"
    RTSP = "rtsp"
    HTTP = "http"
    HLS = "hls"


CAMERA_FORMATS = frozenset({"mpjpeg"})  # an HTTP camera's multipart JPEG: endless, and no times of its own


@dataclass(frozen=True)
class SourceSpec:
    """A parsed source: the URI PyAV opens, its kind, whether it is live, and demuxer options."""

    uri: str
    kind: SourceKind
    live: bool
    format: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    # Sources named by remote callers: every connection FFmpeg makes is checked and pinned (`guarded_io`).
    guard: SourcePolicy | None = field(default=None, compare=False, repr=False)

    @property
    def name(self) -> str:
        if self.kind is SourceKind.FILE:
            return Path(self.uri).name
        return redact(self.uri)  # never show credentials (results, job rows, metrics, logs)


def parse_source(uri: str, rtsp_transport: str = "tcp", live: bool | None = None,
                 guard: SourcePolicy | None = None) -> SourceSpec:
    """Classify `uri` (a path, `/dev/videoN`, `rtsp://`, `http(s)://`, HLS `.m3u8`) into a SourceSpec.

    `live` overrides the default (devices, RTSP and HLS are live; files and plain HTTP downloads are not).
    Raises BadInput for paths that do not exist or are not regular files. With `guard` (sources named by a
    remote caller), every network connection made for the source is checked against that policy and pinned.
    """
    uri = uri.strip()
    if not uri:
        raise BadInput("empty source")
    lower = uri.lower()
    if lower.startswith(("rtsp://", "rtsps://")):
        if rtsp_transport not in ("tcp", "udp"):
            raise BadInput(f"rtsp transport must be tcp or udp, not {rtsp_transport!r}")
        opts = {"rtsp_transport": rtsp_transport}
        return SourceSpec(uri, SourceKind.RTSP, True if live is None else live, options=opts, guard=guard)
    if lower.startswith(("http://", "https://")):
        if re.search(r"\.m3u8(\?|$)", lower):
            return SourceSpec(uri, SourceKind.HLS, True if live is None else live, guard=guard)
        return SourceSpec(uri, SourceKind.HTTP, False if live is None else live, guard=guard)
    scheme = re.match(r"([a-z][a-z0-9+.-]*)://", lower)
    if scheme:
        raise BadInput(f"unsupported URL scheme {scheme.group(1)}:// (use rtsp://, rtsps://, http:// or https://)")
    if re.fullmatch(r"/dev/video\d+", uri):
        if not os.path.exists(uri):
            raise BadInput(f"no such video device: {uri}")
        return SourceSpec(uri, SourceKind.DEVICE, True if live is None else live, format="v4l2")
    path = Path(uri).expanduser()
    try:
        exists = path.exists()
    except OSError as exc:  # e.g. a name longer than the file system allows
        raise BadInput(f"not a usable path: {_one_line(exc)}") from None
    if not exists:
        raise BadInput(f"no such file: {uri[:200]}")
    if path.is_dir():
        raise BadInput(f"{uri} is a directory (use `foresight batch` for folders)")
    if not path.is_file():
        raise BadInput(f"{uri} is not a regular file")
    if path.stat().st_size == 0:
        raise BadInput(f"{uri} is empty")
    return SourceSpec(str(path), SourceKind.FILE, False if live is None else live)


def open_container(spec: SourceSpec, open_timeout_s: float = 10.0, read_timeout_s: float = 10.0,
                   camera_clock: bool = True):
    """Open `spec` with PyAV, turning every FFmpeg/OS failure into a one-line BadInput. A camera's stream
    (`CAMERA_FORMATS`) is opened again on the wall clock, unless `camera_clock` is False (a look at what the
    source is, or whether a picture decodes: no times read)."""
    options = dict(spec.options)
    if spec.kind is SourceKind.RTSP:
        # FFmpeg's RTSP demuxer takes its socket timeout in microseconds.
        options.setdefault("timeout", str(int(max(open_timeout_s, read_timeout_s) * 1_000_000)))
    if spec.kind in (SourceKind.HTTP, SourceKind.HLS):
        options.setdefault("reconnect", "0")
    protocols = ffmpeg_protocols(spec.uri)
    if protocols:  # a playlist or redirect cannot point FFmpeg at file: or another protocol
        options.setdefault("protocol_whitelist", protocols)
    uri, io_open, relay = spec.uri, None, None
    try:
        if spec.guard is not None and spec.kind in (SourceKind.HTTP, SourceKind.HLS):
            io_open = GuardedHttp(spec.guard, read_timeout_s).open  # every URL FFmpeg opens goes through it
            options["http_persistent"] = "0"  # HLS would reuse FFmpeg's own HTTP connection (asserts on ours)
        elif spec.guard is not None and spec.kind is SourceKind.RTSP:
            # FFmpeg talks to a relay that connects only to the checked address and never passes a redirect on
            relay = RtspRelay(spec.guard, spec.uri, max(open_timeout_s, read_timeout_s))
            uri, options["protocol_whitelist"] = relay.url, "rtsp,rtp,udp,tcp"  # TLS, if any, is the relay's
    except SourceRefused as exc:
        raise BadInput(f"{spec.name}: source refused ({exc.reason})") from None
    try:
        container = av.open(uri, mode="r", format=spec.format, options=options,
                            timeout=(open_timeout_s, read_timeout_s), io_open=io_open)
        if camera_clock and container.format.name in CAMERA_FORMATS and "use_wallclock_as_timestamps" not in options:
            # its pictures carry no times (FFmpeg numbers them at 25 a second, whatever the camera sends):
            # opened again, each is timed as it arrives, as Frigate and players time such a camera
            container.close()
            container = av.open(uri, mode="r", format=spec.format, timeout=(open_timeout_s, read_timeout_s),
                                options={**options, "use_wallclock_as_timestamps": "1"}, io_open=io_open)
        return container
    except (av.error.FFmpegError, OSError) as exc:
        if relay is not None:
            relay.close()  # no new connections; one that is open ends with FFmpeg's
        if relay is not None and relay.refused:
            raise BadInput(f"{spec.name}: source refused ({relay.refused})") from None
        if relay is not None and relay.upstream_error:
            raise BadInput(f"{spec.name}: {relay.upstream_error}") from None
        raise _bad_input(spec, exc, open_timeout_s) from None


def settle_live(spec: SourceSpec, live: bool | None, open_timeout_s: float = 10.0) -> SourceSpec:
    """A plain HTTP URL whose liveness was not given (`live` None) is live when it serves a camera's endless
    stream (`CAMERA_FORMATS`: an IP camera's, a webcam server's multipart JPEG), not a download: opened once
    to see which (after the preflight check, so an unreachable URL still fails in its 2.5 s). Before, such a
    camera was read as a file: no reconnects, no recording, no latency budget. An HLS playlist that is finished
    (`#EXT-X-ENDLIST`: a recording, not a broadcast) is read as a file: live, it was read to its end, reopened
    and read again, forever."""
    if live is None and spec.kind is SourceKind.HLS:
        return replace(spec, live=False) if _playlist_ended(spec, open_timeout_s) is True else spec
    if live is not None or spec.kind is not SourceKind.HTTP:
        return spec
    try:
        container = open_container(spec, open_timeout_s, open_timeout_s, camera_clock=False)
    except BadInput:
        return spec  # the preflight check or the reader says why
    try:
        camera = container.format.name in CAMERA_FORMATS
    finally:
        container.close()
    return replace(spec, live=True) if camera else spec


def _playlist_ended(spec: SourceSpec, timeout_s: float) -> bool | None:
    """Whether the HLS playlist (or a master playlist's first variant) is finished; None when it cannot be read
    (the reader then says why). Read under the source's policy, as FFmpeg would read it."""
    from urllib.parse import urljoin

    url = spec.uri
    for _ in range(2):  # a master playlist names its variants; theirs say whether it ends
        try:
            text = _small_text(spec, url, timeout_s)
        except (OSError, httpx.HTTPError, SourceRefused):
            return None
        if "#EXT-X-ENDLIST" in text:
            return True
        lines = [line.strip() for line in text.splitlines()]
        variant = next((lines[i + 1] for i, line in enumerate(lines[:-1]) if line.startswith("#EXT-X-STREAM-INF")),
                       None)
        if not variant:
            return False
        url = urljoin(url, variant)
    return False


def _small_text(spec: SourceSpec, url: str, timeout_s: float, limit: int = 1 << 20) -> str:
    """Up to `limit` bytes of `url`, through the policy's pinned reader when the source has one."""
    if spec.guard is not None:
        reader = GuardedHttp(spec.guard, timeout_s).open(url, 1, {})
        try:
            data = b""
            while len(data) < limit and (chunk := reader.read(limit - len(data))):
                data += chunk
        finally:
            reader.close()
    else:
        with httpx.stream("GET", url, timeout=timeout_s, follow_redirects=True, trust_env=False) as response:
            response.raise_for_status()
            data = b""
            for chunk in response.iter_bytes():
                data += chunk
                if len(data) >= limit:
                    break
    return data[:limit].decode("utf-8", "replace")


def media_streams(container) -> tuple:
    """The (video, audio) streams of an opened container that Foresight reads, each None when absent: the first
    video stream that is a picture over time (an audio file's cover art, an attached picture of one frame, is
    not one, so a song or podcast with a cover is analysed as audio) and the first audio stream."""
    attached = av.stream.Disposition.attached_pic
    video = next((s for s in container.streams.video if not s.disposition & attached), None)
    return video, (container.streams.audio[0] if container.streams.audio else None)


def _bad_input(spec: SourceSpec, exc: BaseException, open_timeout_s: float) -> BadInput:
    """The one-line BadInput for an FFmpeg or OS failure to open `spec`."""
    if isinstance(exc, av.error.InvalidDataError):
        return BadInput(f"{spec.name}: not a readable media file (invalid data)")
    if isinstance(exc, av.error.ExitError):
        return BadInput(f"{spec.name}: timed out or interrupted while opening")
    if isinstance(exc, ConnectionRefusedError):
        return BadInput(f"{spec.name}: connection refused")
    if isinstance(exc, TimeoutError):
        return BadInput(f"{spec.name}: timed out after {open_timeout_s:.0f} s while opening")
    if isinstance(exc, FileNotFoundError):
        return BadInput(f"{spec.name}: not found")
    return BadInput(f"{spec.name}: cannot open ({redact(_one_line(exc), spec.uri)})")


def _one_line(exc: BaseException) -> str:
    text = getattr(exc, "strerror", None) or str(exc)
    return " ".join(str(text).split())[:200]


def content_hash(path: str | Path, chunk: int = 1 << 20) -> str:
    """sha256 of the file's bytes (hex)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()
