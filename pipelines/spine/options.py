"""Everything one analysis is told: the stages' options, sampling, live-source handling, grounding, webhooks."""

from __future__ import annotations

from dataclasses import dataclass, field

from pipelines.media.ingest_stats import ReconnectPolicy
from pipelines.media.policy import SourcePolicy
from pipelines.media.recorder import RecordConfig
from pipelines.sinks.webhooks import WebhookConfig
from pipelines.spine.budget import LatencyBudget
from pipelines.stages.config import GroundingConfig, StageConfig


@dataclass
class AnalyzeOptions:
    stages: StageConfig = field(default_factory=StageConfig)
    sample_fps: float = 2.0
    max_side: int = 640
    duration_s: float | None = None
    rtsp_transport: str = "tcp"
    live: bool | None = None
    watchdog_s: float = 5.0
    open_timeout_s: float = 10.0
    reconnect: ReconnectPolicy = field(default_factory=ReconnectPolicy)
    grounding: GroundingConfig = field(default_factory=GroundingConfig)
    webhook: WebhookConfig = field(default_factory=WebhookConfig)
    budget: LatencyBudget | None = None  # opt-in, live spine only: a controller picks tier and fps each second
    record: RecordConfig | None = None  # live sources: keep a ring of the raw stream on disk for playback
    detect_source: str | None = None  # a live source's sub-stream: analysed instead, the main one recorded
    # Sources named by remote callers (REST): every connection made for the source is checked and pinned.
    source_policy: SourcePolicy | None = None
