"""Search hits shaped for the dashboard's results page (no Streamlit here, so the shaping is testable on its own):
identical hits folded into one, pages of results, mm:ss and wall-clock labels, and a thumbnail of each hit's
first frame, decoded from the job's recording (a live stream) or from the kept file (an upload).
"""

from __future__ import annotations

import datetime as dt
import functools
import io
import math
from pathlib import Path

import av
from PIL import Image

from app.services.recordings import RecordedSpan
from pipelines.media.decode import pixel_aspect, shown_picture
from pipelines.media.recorder import OFFSET_S, list_segments, segment_start
from ui.data import fmt_time

PER_PAGE = 10
MAX_RESULTS = 50
LIVE_KINDS = ("dashboard-live", "stream")  # the dashboard's and the REST API's live streams
THUMB_PX = 160


def dedupe(hits: list[dict]) -> list[dict]:
    """The hits without repeats, best first: a later hit with the same job and span, or the same source and
    start (the same file analysed twice), as shown (to the second), is dropped and counted in the kept one's
    `repeats`."""
    kept: list[dict] = []
    seen: dict[tuple, dict] = {}
    for hit in hits:
        keys = [("job", hit.get("job_id"), _sec(hit["start"]), _sec(hit["end"])),
                ("source", hit.get("source"), _sec(hit["start"]))]
        first = next((seen[k] for k in keys if k in seen), None)
        if first is not None:
            first["repeats"] = first.get("repeats", 0) + 1
            continue
        hit = {**hit, "repeats": 0}
        kept.append(hit)
        seen.update((k, hit) for k in keys)
    return kept


def _sec(t: float) -> int:
    """A time as mm:ss shows it (whole seconds), as a key: two hits that read alike are one."""
    return int(max(0.0, float(t)))


def page_of(hits: list[dict], page: int, per_page: int = PER_PAGE) -> tuple[list[dict], int, int]:
    """The hits of page `page` (from 0, clamped into range), that page, and how many pages there are."""
    pages = max(1, math.ceil(len(hits) / per_page))
    page = min(max(0, page), pages - 1)
    return hits[page * per_page:(page + 1) * per_page], page, pages


def span_label(hit: dict) -> str:
    """mm:ss-mm:ss of a hit in its source's own time."""
    return f"{fmt_time(hit['start'])}-{fmt_time(hit['end'])}"


def clock(epoch: float, today: dt.date | None = None) -> str:
    """A wall-clock time in the server's local time: HH:MM:SS today, with the date on other days."""
    when = dt.datetime.fromtimestamp(epoch)
    return when.strftime("%H:%M:%S") if when.date() == (today or dt.date.today()) else when.strftime("%Y-%m-%d %H:%M:%S")


def when_label(hit: dict, job: dict | None, span: RecordedSpan | None, today: dt.date | None = None) -> str:
    """When the hit happened by the clock: for a live job the recording's wall clock at its start (or, with no
    recording log, the job's start plus the stream time, marked "≈"); for a file, when it was analysed."""
    if job is None:
        return ""
    if job["kind"] in LIVE_KINDS:
        if span is not None and not span.approximate:
            return f"at {clock(span.wall(hit['start']), today)}"
        return f"at ≈{clock(job['created_at'] + hit['start'], today)}"
    return f"file analysed {clock(job['created_at'], today)}"


def page_summary(total: int, page: int, pages: int, per_page: int = PER_PAGE) -> str:
    """"results 11-20 of 34 (page 2 of 4)"."""
    if not total:
        return "no moments found"
    first = page * per_page + 1
    return f"results {first}-{min(total, first + per_page - 1)} of {total} (page {page + 1} of {pages})"


def frame_jpeg(path: str | Path, t: float, width: int = THUMB_PX, offset: float = 0.0) -> bytes | None:
    """A small JPEG of the frame shown at time `t` of a media file (times in the file are `t + offset`), or None
    when it has no picture there; cached per file version, so a page of hits decodes each frame once."""
    path = Path(path)
    try:
        version = path.stat().st_mtime_ns
    except OSError:
        return None
    return _frame_jpeg(str(path), version, round(float(t), 1), width, offset)


@functools.lru_cache(maxsize=256)
def _frame_jpeg(path: str, version: int, t: float, width: int, offset: float) -> bytes | None:
    target = t + offset
    try:
        with av.open(path) as container:
            if not container.streams.video:
                return None
            stream = container.streams.video[0]
            if target > 1.0 and not offset:  # a kept file: from the keyframe before (a segment is short enough)
                container.seek(int(target / stream.time_base), stream=stream, backward=True)
            shown = None
            for frame in container.decode(stream):
                if frame.time is not None and frame.time > target + 1e-3 and shown is not None:
                    break
                shown = frame
            if shown is None:
                return None
            image = Image.fromarray(shown_picture(shown, pixel_aspect(stream)))
    except (av.error.FFmpegError, OSError, ValueError):
        return None
    image.thumbnail((width, width * 4))
    out = io.BytesIO()
    image.convert("RGB").save(out, format="JPEG", quality=80)
    return out.getvalue()


def recording_frame(folder: str | Path, t: float, width: int = THUMB_PX) -> bytes | None:
    """The thumbnail of stream time `t` from a live job's recording, or None when that part is not recorded."""
    segments = [p for p in list_segments(folder) if segment_start(p) <= t]
    if not segments:
        return None
    return frame_jpeg(segments[-1], t, width, offset=OFFSET_S)


def thumbnail_of(hit: dict, recording: Path | None, media: Path | None, width: int = THUMB_PX) -> bytes | None:
    """A hit's first frame: from the recording of its live job, else from its kept file, else None."""
    if recording is not None:
        return recording_frame(recording, float(hit["start"]), width)
    if media is not None:
        return frame_jpeg(media, float(hit["start"]), width)
    return None

