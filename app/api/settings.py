"""Server settings: where state lives, who may call, and the limits that keep one server from being swamped."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from pipelines import AnalyzeOptions

DEFAULT_CONTENT_TYPES = (
    "video/mp4", "video/quicktime", "video/x-matroska", "video/webm", "video/x-msvideo", "video/mp2t",
    "video/mpeg", "video/x-flv", "video/3gpp", "audio/wav", "audio/x-wav", "audio/mpeg", "audio/flac",
    "audio/ogg", "audio/mp4", "audio/aac", "application/octet-stream",
)


@dataclass
class Settings:
    """Everything `create_app` needs; `serve_main` fills it from the command line."""

    db_path: Path = field(default_factory=lambda: Path("foresight.db"))
    upload_dir: Path | None = None  # default: an `uploads` folder next to the database
    api_key: str | None = None  # when set, every /v1 call needs `X-API-Key: <key>` or `Authorization: Bearer <key>`
    max_upload_bytes: int = 512 * 1024 * 1024
    max_duration_s: float = 3600.0
    allowed_content_types: tuple[str, ...] = DEFAULT_CONTENT_TYPES
    max_queue: int = 32  # queued + running jobs; one more upload gets 429
    parallel: int | None = None  # jobs analysed at once (default: the Ray cluster's CPUs)
    max_streams: int = 8
    options: AnalyzeOptions = field(default_factory=AnalyzeOptions)
    stream_options: AnalyzeOptions | None = None  # live streams (default: `options`)
    grounder_checkpoint: Path | None = None  # a TriSense checkpoint; search then uses the grounding index too
    keep_uploads: bool = False

    def __post_init__(self) -> None:
        self.db_path = Path(self.db_path)
        self.upload_dir = Path(self.upload_dir) if self.upload_dir else self.db_path.parent / "uploads"
        if self.max_upload_bytes <= 0 or self.max_duration_s <= 0 or self.max_queue <= 0 or self.max_streams <= 0:
            raise ValueError("upload size, duration, queue and stream limits must be positive")
        if self.parallel is not None and self.parallel <= 0:
            raise ValueError("parallel must be positive")
        if self.api_key is not None and not self.api_key.strip():
            raise ValueError("the API key must not be blank")
        if self.api_key is None and os.environ.get("FORESIGHT_API_KEY"):
            self.api_key = os.environ["FORESIGHT_API_KEY"]
        self.allowed_content_types = tuple(t.lower() for t in self.allowed_content_types)
