"""The live spine as Ray actors: ingest -> speech, audio, visual -> parser -> safety -> sink.

The ingest actor chains the others by passing ObjectRefs from one actor call into the next, so segment data
moves between actor processes without a round trip through the driver. Stage actors restart after a
crash (`max_restarts`) and their in-flight calls are retried, so the stream goes on.
"""

from __future__ import annotations

import time
from collections import deque

import ray

from pipelines.ingest import ReconnectPolicy, SegmentReader
from pipelines.results import ResultBuilder
from pipelines.sources import SourceSpec
from pipelines.stages import (
    AudioStage,
    ParserStage,
    SafetyStage,
    SpeechStage,
    StageConfig,
    VisualStage,
    limit_threads,
)

STAGE_OPTIONS = dict(max_restarts=3, max_task_retries=3, num_cpus=0.25)


@ray.remote(**STAGE_OPTIONS)
class SpeechActor:
    def __init__(self, config: StageConfig):
        limit_threads(1)
        self.stage = SpeechStage(config)

    def ready(self) -> bool:
        return True

    def process(self, seg) -> dict:
        return self.stage.process(seg)

    def finish(self) -> dict:
        return self.stage.finish()

    def pid(self) -> int:
        import os
        return os.getpid()


@ray.remote(**STAGE_OPTIONS)
class AudioActor:
    def __init__(self, config: StageConfig):
        limit_threads(1)
        self.stage = AudioStage(config)

    def ready(self) -> bool:
        return True

    def process(self, seg) -> dict:
        return self.stage.process(seg)


@ray.remote(**STAGE_OPTIONS)
class VisualActor:
    def __init__(self, config: StageConfig):
        limit_threads(1)
        self.stage = VisualStage(config)

    def ready(self) -> bool:
        return True

    def process(self, seg) -> dict:
        return self.stage.process(seg)


@ray.remote(**STAGE_OPTIONS)
class ParserActor:
    def __init__(self, config: StageConfig):
        limit_threads(1)
        self.stage = ParserStage(config)

    def ready(self) -> bool:
        return True

    def process(self, seg_meta: dict, speech: dict, audio: dict, visual: dict) -> dict:
        return self.stage.process(seg_meta, speech, audio, visual)

    def finish(self, speech: dict) -> dict:
        return self.stage.finish(speech)


@ray.remote(**STAGE_OPTIONS)
class GroundingActor:
    def __init__(self, config):
        limit_threads(1)
        from pipelines.grounding import GroundingStage

        self.stage = GroundingStage(config)

    def ready(self) -> bool:
        return True

    def process(self, parsed: dict, audio: dict, visual: dict) -> dict:
        return self.stage.process(parsed, audio, visual)

    def finish(self, parsed: dict) -> dict:
        return self.stage.finish(parsed)


@ray.remote(**STAGE_OPTIONS)
class SafetyActor:
    def __init__(self, config: StageConfig):
        limit_threads(1)
        self.stage = SafetyStage(config)

    def ready(self) -> bool:
        return True

    def process(self, parsed: dict, visual: dict | None = None) -> dict:
        return self.stage.process(parsed, visual)

    def finish(self, parsed: dict) -> dict:
        return self.stage.finish(parsed)


@ray.remote(max_restarts=3, max_task_retries=3, num_cpus=0.1, max_concurrency=4)
class SinkActor:
    """Collects results, appends final rows to SQLite as they close, and keeps a feed for live subscribers."""

    def __init__(self, source: str, job_id: str | None = None, db_path: str | None = None, feed_size: int = 1000,
                 webhook=None):
        self.builder = ResultBuilder(source)
        self.webhook = None
        if webhook is not None and webhook.url:
            from pipelines.webhooks import WebhookSender
            self.webhook = WebhookSender(webhook, source)
        self.job_id = job_id
        self.store = None
        if db_path and job_id:
            from pipelines.store import Store
            self.store = Store(db_path)
        self.feed: deque = deque(maxlen=feed_size)
        self.seq = 0

    def ready(self) -> bool:
        return True

    def write(self, parsed: dict) -> int:
        self.builder.add(parsed)
        if self.webhook is not None:
            self.webhook.offer(parsed)
        if self.store is not None:
            self.store.append_rows(self.job_id, self.builder.source, parsed.get("events_closed", []),
                                   parsed.get("transcript", []), parsed.get("alerts", []))
        self.seq += 1
        self.feed.append((self.seq, {"time": parsed.get("end"), "events": parsed.get("events_closed", []),
                                     "moments": parsed.get("moments", []),
                                     "transcript": parsed.get("transcript", []), "tags": parsed.get("tags", {}),
                                     "alerts": parsed.get("alerts", []), "visual": parsed.get("visual")}))
        return parsed.get("index") if parsed.get("index") is not None else -1

    def feed_since(self, seq: int) -> list:
        return [item for item in self.feed if item[0] > seq]

    def latencies(self) -> list[float]:
        return list(self.builder.latencies)

    def result(self, duration_s: float | None, has_audio: bool, has_video: bool, wall_s: float,
               ingest: dict | None) -> dict:
        extra = {"webhook": self.webhook.close()} if self.webhook is not None else None
        return self.builder.build(duration_s, has_audio, has_video, wall_s, ingest, extra)


@ray.remote(max_restarts=0, num_cpus=0.25, max_concurrency=4)
class IngestActor:
    """Reads one source and drives the chain; `run` returns the ingest statistics when the stream ends."""

    def __init__(self, spec: SourceSpec, source_id: str, sample_fps: float = 2.0, max_side: int = 640,
                 duration_s: float | None = None, policy: ReconnectPolicy | None = None, watchdog_s: float = 5.0,
                 open_timeout_s: float = 10.0, budget=None):
        limit_threads(1)
        self.budget = None
        if budget is not None:  # opt-in latency budget (pipelines/budget.py): picks tier and frame rate per second
            from pipelines.budget import BudgetHook
            self.budget = BudgetHook(budget, sample_fps)
        self.reader = SegmentReader(spec, source_id, sample_fps=sample_fps, max_side=max_side,
                                    duration_s=duration_s, policy=policy, watchdog_s=watchdog_s,
                                    open_timeout_s=open_timeout_s)
        self.position = 0.0
        self.call_s = 0.0

    def progress(self) -> dict:
        info = self.reader.info
        return {"position": self.position, "duration": info.duration_s if info else None,
                "stats": self.reader.stats.to_dict()}

    def stop(self) -> None:
        self.reader.stop()

    def info(self, timeout: float = 30.0) -> dict | None:
        info = self.reader.wait_info(timeout)
        return None if info is None else info.__dict__

    def run(self, speech, audio, visual, parser, safety, sink, grounding=None, max_inflight: int = 4) -> dict:
        self.reader.start()
        inflight: deque = deque()
        try:
            while True:
                seg = self.reader.get()
                if seg is None:
                    break
                if self.budget is not None:
                    seg = self.budget.apply(seg)
                t0 = time.perf_counter()
                seg_ref = ray.put(seg)
                meta = seg.meta()
                sp = speech.process.remote(seg_ref)
                au = audio.process.remote(seg_ref)
                vi = visual.process.remote(seg_ref)
                parsed = parser.process.remote(meta, sp, au, vi)
                if grounding is not None:
                    parsed = grounding.process.remote(parsed, au, vi)
                final = safety.process.remote(parsed)
                inflight.append(sink.write.remote(final))
                if self.budget is not None:
                    self.budget.track(seg, final.future())
                self.call_s += time.perf_counter() - t0
                self.position = seg.end
                while len(inflight) > max_inflight:
                    ray.get(inflight.popleft())
        finally:
            self.reader.stop()
            # Close whatever is open (a speech span, open events) and wait for the sink to have it all.
            last = parser.finish.remote(speech.finish.remote())
            if grounding is not None:
                last = grounding.finish.remote(last)
            inflight.append(sink.write.remote(safety.finish.remote(last)))
            ray.get(list(inflight))
        out = {"stats": self.reader.stats.to_dict(), "call_s": self.call_s,
               "info": self.reader.info.__dict__ if self.reader.info else None}
        if self.budget is not None:
            out["budget"] = self.budget.summary()
        return out
