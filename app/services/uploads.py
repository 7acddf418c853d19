"""Clips handed to Foresight by a person (REST uploads, the dashboard): safe names, kept copies, and the media
check (it decodes, it is not a still image, it is not too long)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from models.errors import BadInput
from pipelines.media.decode import MediaDecoder, StreamInfo
from pipelines.media.preflight import probe
from pipelines.media.segmenter import iter_segments
from pipelines.media.sources import open_container, parse_source

if TYPE_CHECKING:
    from pipelines.spine.options import AnalyzeOptions


class UploadRejected(Exception):
    """An upload that breaks a limit; `status` is the HTTP status and the message a one-line reason."""

    def __init__(self, status: int, reason: str):
        super().__init__(reason)
        self.status = status


@dataclass
class Upload:
    path: Path
    filename: str
    content_type: str
    size: int
    fields: dict[str, list[str]] = field(default_factory=dict)


def safe_filename(name: str | None) -> str:
    """The last path component with anything but letters, digits, dot, dash and underscore replaced."""
    base = re.split(r"[\\/]", name or "")[-1].strip()
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", base).lstrip(".")
    return base[:120] or "upload"


def private_dir(path: Path) -> Path:
    """`path` (and missing parents) created owner-only, 0700: uploaded clips are the users' own footage."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.chmod(0o700)
    return path


def save_upload(folder: Path, name: str, data: bytes) -> Path:
    """Keep an uploaded file under `folder`, content-addressed, so it can be played back later."""
    digest = hashlib.sha256(data).hexdigest()[:16]
    path = folder / digest / safe_filename(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        tmp = path.with_suffix(path.suffix + ".part")
        tmp.write_bytes(data)
        tmp.replace(path)
    return path


# A clip this short is cut into seconds at upload, as the analysis will cut it: one with no second at all (a few
# frames) is refused now, with the CLI's reason, instead of being queued to fail.
SHORT_CLIP_S = 2.0

STILL_IMAGE_FORMATS = ("image2", "png_pipe", "jpeg_pipe", "webp_pipe", "bmp_pipe", "tiff_pipe", "svg_pipe")


def media_info(path: Path) -> StreamInfo:
    """Decode the file's first frames with the CLI's preflight (`pipelines.media.preflight.probe`: BadInput with
    the reason if nothing decodes, e.g. an MP4 with its moov but no media data), refuse still images, and return
    its streams and duration."""
    spec = parse_source(str(path))
    probe(spec)
    container = open_container(spec)
    try:
        fmt = container.format.name or ""
        if any(name in STILL_IMAGE_FORMATS for name in fmt.split(",")):
            raise BadInput(f"{spec.name}: a still image ({fmt}), not a video or audio clip")
        info = MediaDecoder(container).info()
    finally:
        container.close()
    if info.duration_s is None or info.duration_s < SHORT_CLIP_S:
        if next(iter_segments(path), None) is None:
            raise BadInput(f"{spec.name}: no decodable audio or video")
    return info


def media_within(path: Path, max_duration_s: float, flag: str = "") -> StreamInfo:
    """`media_info`, refused (BadInput) when the file holds more than `max_duration_s` seconds (as its header
    declares, or its packets hold where FFmpeg only estimated the duration): the cap the API, the dashboard,
    `analyze` and `batch` share (`flag`, e.g. "--max-duration", names it in the reason)."""
    info = media_info(path)
    if info.duration_s is None or info.duration_s <= max_duration_s:
        return info
    limit = f"the limit is {flag + ' ' if flag else ''}{max_duration_s:g} s"
    container = open_container(parse_source(str(path)))
    try:  # an estimate (a VBR MP3's was 1.5 times its length) is measured from the packets before it refuses
        decoder = MediaDecoder(container)
        held = decoder.held_length(max_duration_s) if decoder.estimated() else None
    finally:
        container.close()
    if held is None:
        raise BadInput(f"{path.name}: the clip declares {info.duration_s:.0f} s; {limit}")
    if held > max_duration_s:
        raise BadInput(f"{path.name}: the clip runs longer than {max_duration_s:g} s; {limit}")
    return replace(info, duration_s=round(held, 3))


def capped(options: AnalyzeOptions | None, max_duration_s: float) -> AnalyzeOptions:
    """`options` that stop a file's analysis after `max_duration_s` seconds of media. `media_within` checks what
    the header declares, and a header may declare less than the file holds (TS files joined end to end) or
    nothing at all (a browser's WebM recording); the ingest stops there and says so in `ingest.warnings`."""
    from pipelines.spine.options import AnalyzeOptions

    options = options or AnalyzeOptions()
    limit = max_duration_s if options.duration_s is None else min(options.duration_s, max_duration_s)
    return replace(options, duration_s=limit)


def check_media(path: Path, max_duration_s: float) -> StreamInfo:
    """`media_within` as UploadRejected(422) with the reason."""
    try:
        return media_within(path, max_duration_s)
    except BadInput as exc:
        raise UploadRejected(422, str(exc)) from None
