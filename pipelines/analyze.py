"""Analysis of one source: on the Ray actor spine (`analyze`) or inline in one process (`analyze_inline`,
used by batch tasks). Both run the same stages and return the design's result schema.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from app.errors import BadInput
from pipelines.budget import LatencyBudget
from pipelines.grounding import GroundingConfig, GroundingStage, checkpoint_path
from pipelines.ingest import ReconnectPolicy, SegmentReader
from pipelines.results import ResultBuilder
from pipelines.sources import SourceSpec, parse_source
from pipelines.stages import (
    AudioStage,
    ParserStage,
    SafetyStage,
    SpeechStage,
    StageConfig,
    VisualStage,
    limit_threads,
    prefm_checkpoint,
)
from pipelines.webhooks import WebhookConfig, WebhookSender


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


def probe(spec: SourceSpec, timeout_s: float = 10.0) -> None:
    """Open `spec` and check it has a decodable stream; raises BadInput with the reason if not."""
    from pipelines.decode import MediaDecoder
    from pipelines.sources import open_container

    container = open_container(spec, timeout_s, timeout_s)
    try:
        MediaDecoder(container)
    finally:
        container.close()


def _unwrap(exc: BaseException) -> BaseException:
    """Ray wraps actor exceptions; return the user-facing cause when it is one of ours."""
    cause = getattr(exc, "cause", None)
    while cause is not None and not isinstance(cause, BadInput) and getattr(cause, "cause", None) is not None:
        cause = cause.cause
    return cause if isinstance(cause, BadInput) else exc


class Pipeline:
    """A running actor pipeline for one source. `wait()` blocks until the stream ends and returns the result."""

    def __init__(self, source: str, options: AnalyzeOptions | None = None, job_id: str | None = None,
                 db_path: str | None = None, source_id: str | None = None):
        import ray

        from pipelines.actors import (
            AudioActor,
            GroundingActor,
            IngestActor,
            ParserActor,
            SafetyActor,
            SinkActor,
            SpeechActor,
            VisualActor,
        )
        from pipelines.runtime import ensure_ray

        self.options = options = options or AnalyzeOptions()
        self.spec: SourceSpec = parse_source(source, options.rtsp_transport, options.live)
        if not self.spec.live:
            probe(self.spec, options.open_timeout_s)  # fail fast on bad files, before starting Ray and models
        if options.grounding.enabled:
            checkpoint_path(options.grounding.checkpoint)
        prefm_checkpoint(options.stages)  # a PreFM checkpoint asked for but missing: say so before starting
        ensure_ray()
        self.started = time.perf_counter()
        self.speech = SpeechActor.remote(options.stages)
        self.audio = AudioActor.remote(options.stages)
        self.visual = VisualActor.remote(options.stages)
        self.parser = ParserActor.remote(options.stages)
        self.safety = SafetyActor.remote(options.stages)
        self.grounding = GroundingActor.remote(options.grounding) if options.grounding.enabled else None
        self.sink = SinkActor.remote(self.spec.name, job_id, db_path, webhook=options.webhook)
        self.ingest = IngestActor.remote(self.spec, source_id or self.spec.name, options.sample_fps,
                                         options.max_side, options.duration_s, options.reconnect,
                                         options.watchdog_s, options.open_timeout_s, budget=options.budget)
        try:
            actors = [self.speech, self.audio, self.visual, self.parser, self.safety, self.sink]
            ray.get([a.ready.remote() for a in actors + ([self.grounding] if self.grounding else [])])
        except ray.exceptions.RayActorError as exc:
            self.close()
            cause = _unwrap(exc)
            if isinstance(cause, BadInput):
                raise cause from None
            raise RuntimeError(f"a model actor failed to start: {exc}") from None
        self.run_ref = self.ingest.run.remote(self.speech, self.audio, self.visual, self.parser, self.safety,
                                              self.sink, self.grounding)
        self._ray = ray

    def progress(self) -> dict:
        return self._ray.get(self.ingest.progress.remote())

    def stop(self) -> None:
        self.ingest.stop.remote()

    def done(self, timeout: float = 0.0) -> bool:
        ready, _ = self._ray.wait([self.run_ref], timeout=timeout)
        return bool(ready)

    def wait(self, show_progress: bool | str = False, stop_event: threading.Event | None = None) -> dict:
        """Block until the stream ends; setting `stop_event` (e.g. from a SIGINT handler) ends a live source."""
        ray = self._ray
        bar = None
        last_line = ""
        stopping = False
        while not self.done(0.5):
            if stop_event is not None and stop_event.is_set() and not stopping:
                self.stop()
                stopping = True
            if show_progress == "plain":
                last_line = _plain_progress(last_line, self.progress())
            elif show_progress:
                bar = _update_bar(bar, self.progress(), self.spec.live)
        try:
            out = ray.get(self.run_ref)
        except ray.exceptions.RayTaskError as exc:
            raise _unwrap(exc) from None
        finally:
            if bar is not None:
                bar.close()
        info = out["info"] or {}
        wall = time.perf_counter() - self.started
        stats = out["stats"]
        result = ray.get(self.sink.result.remote(info.get("duration_s") if not self.spec.live else None,
                                                 bool(info.get("has_audio")), bool(info.get("has_video")),
                                                 wall, stats))
        result["timings"]["ray_call_s"] = round(out["call_s"], 4)
        if "budget" in out:
            result["budget"] = out["budget"]
        return result

    def close(self) -> None:
        for actor in ("ingest", "speech", "audio", "visual", "parser", "safety", "grounding", "sink"):
            handle = getattr(self, actor, None)
            if handle is not None:
                self._ray_kill(handle)

    @staticmethod
    def _ray_kill(handle) -> None:
        import ray
        try:
            ray.kill(handle, no_restart=True)
        except Exception:  # already gone
            pass


def _plain_progress(last: str, prog: dict) -> str:
    """One line per change on stderr, for logs and non-terminal consumers (`--progress plain`)."""
    stats = prog["stats"]
    line = (f"progress: {prog['position']:.0f} s, {stats['health']}, {stats['reconnects']} reconnects, "
            f"{stats['frames_dropped']} frames dropped")
    if line != last:
        print(line, file=sys.stderr, flush=True)
    return line


def _update_bar(bar, prog: dict, live: bool):
    from tqdm import tqdm

    total = None if live else prog.get("duration")
    if bar is None:
        bar = tqdm(total=round(total, 1) if total else None, unit="s", desc="analyzing", file=sys.stderr,
                   bar_format="{l_bar}{bar}| {n:.0f}/{total_fmt} s [{elapsed}<{remaining}]" if total else None,
                   leave=False)
    bar.n = round(prog["position"], 1) if total is None else min(round(prog["position"], 1), bar.total)
    stats = prog["stats"]
    bar.set_postfix_str(f"{stats['health']}, dropped {stats['frames_dropped']}", refresh=False)
    bar.refresh()
    return bar


def analyze(source: str, options: AnalyzeOptions | None = None, show_progress: bool | str = False,
            job_id: str | None = None, db_path: str | None = None,
            stop_event: threading.Event | None = None) -> dict:
    """Run `source` through the actor pipeline and return the result dict."""
    pipeline = Pipeline(source, options, job_id=job_id, db_path=db_path)
    try:
        return pipeline.wait(show_progress, stop_event)
    finally:
        pipeline.close()


# -- inline (batch) -----------------------------------------------------------------------------------------
_STAGE_CACHE: dict = {}


def _stages(config: StageConfig):
    """Models are loaded once per worker process and reused across the files it analyzes."""
    key = repr(config)
    if key not in _STAGE_CACHE:
        _STAGE_CACHE.clear()
        _STAGE_CACHE[key] = (SpeechStage(config), AudioStage(config), VisualStage(config))
    speech, audio, visual = _STAGE_CACHE[key]
    speech.reset()
    audio.reset()
    visual.reset()
    return speech, audio, visual


def _safety(config: StageConfig) -> SafetyStage:
    """A fresh monitor per file (its log and cooldowns belong to one source) sharing the loaded rule retriever."""
    key = ("safety-retriever", repr(config))
    stage = SafetyStage(config, retriever=_STAGE_CACHE.get(key))
    if stage.monitor is not None:
        _STAGE_CACHE[key] = stage.monitor.retriever
    return stage


def analyze_inline(source: str, options: AnalyzeOptions | None = None,
                   progress: Callable[[float], None] | None = None) -> dict:
    """The same analysis in the calling process, without actors (one file per Ray task in batch mode).

    `progress`, if given, is called after each second with the fraction done (files of known duration).
    """
    options = options or AnalyzeOptions()
    limit_threads(1)
    spec = parse_source(source, options.rtsp_transport, options.live)
    started = time.perf_counter()
    speech, audio, visual = _stages(options.stages)
    parser = ParserStage(options.stages)
    safety = _safety(options.stages)
    grounding = GroundingStage(options.grounding) if options.grounding.enabled else None
    builder = ResultBuilder(spec.name)
    webhook = WebhookSender(options.webhook, spec.name) if options.webhook.url else None
    reader = SegmentReader(spec, spec.name, sample_fps=options.sample_fps, max_side=options.max_side,
                           duration_s=options.duration_s, policy=options.reconnect, watchdog_s=options.watchdog_s,
                           open_timeout_s=options.open_timeout_s).start()
    try:
        while (seg := reader.get()) is not None:
            meta = seg.meta()
            au, vi = audio.process(seg), visual.process(seg)
            parsed = parser.process(meta, speech.process(seg), au, vi)
            if grounding is not None:
                parsed = grounding.process(parsed, au, vi)
            parsed = safety.process(parsed)
            builder.add(parsed)
            if webhook is not None:
                webhook.offer(parsed)
            if progress is not None and reader.info is not None and reader.info.duration_s:
                progress(min(1.0, seg.end / reader.info.duration_s))
    finally:
        reader.stop()
    last = parser.finish(speech.finish())
    if grounding is not None:
        last = grounding.finish(last)
    last = safety.finish(last)
    builder.add(last)
    extra = None
    if webhook is not None:
        webhook.offer(last)
        extra = {"webhook": webhook.close()}
    info = reader.info
    return builder.build(info.duration_s if info else None, bool(info and info.has_audio),
                         bool(info and info.has_video), time.perf_counter() - started, reader.stats.to_dict(),
                         extra)
