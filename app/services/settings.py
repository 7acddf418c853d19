"""Settings, built once from flags and the environment and validated here, for the CLI, the REST server and
the dashboard: the analysis options (`analysis_options`), the server's `Settings` (where state lives, who may
call, and the limits that keep one server from being swamped), and the dashboard's store (`dashboard_db`)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from models.errors import BadInput
from pipelines import AnalyzeOptions, GroundingConfig, StageConfig, WebhookConfig

DEFAULT_DB = "foresight.db"
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

    @classmethod
    def from_args(cls, args) -> Settings:
        """`foresight serve`'s flags; ValueError or BadInput with the reason."""
        options = analysis_options(args)
        if args.max_upload_mb <= 0:
            raise ValueError("--max-upload-mb must be positive")
        return cls(db_path=Path(args.db), upload_dir=Path(args.uploads) if args.uploads else None,
                   api_key=args.api_key, max_upload_bytes=int(args.max_upload_mb * 1024 * 1024),
                   max_duration_s=args.max_duration, max_queue=args.max_queue, parallel=args.parallel,
                   max_streams=args.max_streams, options=options,
                   allowed_content_types=tuple(args.allowed_types or DEFAULT_CONTENT_TYPES),
                   grounder_checkpoint=Path(args.grounder) if args.grounder else None)


def dashboard_db(env: dict | None = None) -> Path:
    """The dashboard's store: `FORESIGHT_DB` (set by `foresight dashboard --db`) or ./foresight.db."""
    env = os.environ if env is None else env
    return Path(env.get("FORESIGHT_DB") or DEFAULT_DB).resolve()


def analysis_options(args) -> AnalyzeOptions:
    """The analysis options from parsed flags (`foresight analyze`, `batch`, `serve`: absent flags keep their
    defaults), checked here once; BadInput names the flag at fault."""
    def flag(name: str, default=None):
        return getattr(args, name, default)

    if args.fps <= 0 or args.fps > 30:
        raise BadInput("--fps must be in (0, 30]")
    language = flag("language", "en")
    stages = StageConfig(asr=not flag("no_asr", False), asr_model=flag("asr_model"), tags=not flag("no_tags", False),
                         visual=not flag("no_visual", False), events_model=flag("events", "auto"),
                         prefm_checkpoint=flag("prefm_model"), asr_language=None if language == "auto" else language,
                         safety=not flag("no_safety", False), safety_threshold=flag("safety_threshold"),
                         judge_url=flag("judge_url"), camera=flag("camera", "camera"))
    opts = AnalyzeOptions(stages=stages, sample_fps=args.fps)
    if getattr(args, "webhook", None):
        try:
            opts.webhook = WebhookConfig(url=args.webhook, kinds=("alerts", "events", "moments") if args.webhook_events
                                         else ("alerts",))
        except ValueError as exc:
            raise BadInput(str(exc)) from None
    opts.grounding = GroundingConfig(queries=list(getattr(args, "query", None) or []),
                                     standing=list(getattr(args, "watch", None) or []),
                                     checkpoint=getattr(args, "grounding_model", None))
    if getattr(args, "duration", None) is not None:
        if args.duration <= 0:
            raise BadInput("--duration must be positive")
        opts.duration_s = args.duration
    if getattr(args, "rtsp_transport", None):
        opts.rtsp_transport = args.rtsp_transport
    if getattr(args, "watchdog", None):
        opts.watchdog_s = args.watchdog
    if getattr(args, "reconnect_budget", None) is not None:
        opts.reconnect.outage_budget_s = args.reconnect_budget
    return opts
