"""The stage graph inline, in the calling process: batch tasks, API jobs, the dashboard and tests.

Same graph, same stages, same sink as the Ray runner (`actors.py`), so both give identical results.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from pipelines.media.ingest import SegmentReader
from pipelines.media.sources import parse_source
from pipelines.sinks.sink import Sink
from pipelines.spine import graph
from pipelines.spine.options import AnalyzeOptions
from pipelines.stages.config import StageConfig, limit_threads
from pipelines.stages.record import Second


class StageCache:
    """Stages with a `reset()` (speech, audio, visual, safety) keep their loaded models between the sources a
    worker process analyzes under one configuration; they are reset for each new source. The others are
    built fresh per source."""

    def __init__(self) -> None:
        self.config: StageConfig | None = None
        self.stages: dict[str, object] = {}

    def get(self, node: graph.Node, options: AnalyzeOptions):
        if options.stages != self.config:
            self.stages.clear()
            self.config = replace(options.stages)
        config = graph.node_config(node, options)
        stage = self.stages.get(node.name)
        if stage is None:
            stage = graph.build_stage(node, config)
            if not hasattr(stage, "reset"):
                return stage
            self.stages[node.name] = stage
        stage.reset()
        return stage


PROCESS_CACHE = StageCache()  # a batch worker reuses its models across the files it analyzes


def analyze_inline(source: str, options: AnalyzeOptions | None = None,
                   progress: Callable[[float], None] | None = None, cache: StageCache = PROCESS_CACHE) -> dict:
    """Analyze `source` in this process and return the result dict.

    `progress`, if given, is called after each second with the fraction done (files of known duration).
    """
    options = options or AnalyzeOptions()
    limit_threads(1)
    spec = parse_source(source, options.rtsp_transport, options.live, options.source_policy)
    started = time.perf_counter()
    nodes = graph.nodes(options)
    stages = {node.name: cache.get(node, options) for node in nodes}
    sink = Sink(spec.name, webhook=options.webhook)
    reader = SegmentReader(spec, spec.name, sample_fps=options.sample_fps, max_side=options.max_side,
                           duration_s=options.duration_s, policy=options.reconnect, watchdog_s=options.watchdog_s,
                           open_timeout_s=options.open_timeout_s, record=options.record,
                           decode_video=graph.reads_frames(options)).start()

    clock = graph.StageClock().start(stages)

    def call(node: graph.Node, method: str, args: list):
        return clock.call(node.name, stages[node.name], method, args)

    try:
        while (seg := reader.get()) is not None:
            sink.write(graph.step(nodes, call, seg, Second.of(seg)))
            if progress is not None and reader.info is not None and reader.info.duration_s:
                progress(min(1.0, seg.end / reader.info.duration_s))
    finally:
        reader.stop()
    sink.write(graph.finish(nodes, call))
    info = reader.info
    timings = graph.stage_timings(reader.timings, clock.busy,
                                  {name: clock.parts(name, stage) for name, stage in stages.items()})
    node_id = ray_node_id()
    if node_id is not None:
        timings["node_id"] = node_id
    return sink.result(info.duration_s if info else None, bool(info and info.has_audio),
                       bool(info and info.has_video), time.perf_counter() - started, reader.stats.to_dict(), timings)


def ray_node_id() -> str | None:
    """The Ray node this process runs on (a batch task, an API job), or None outside Ray."""
    import sys

    ray = sys.modules.get("ray")  # never import Ray just to ask
    if ray is None or not ray.is_initialized():
        return None
    try:
        return ray.get_runtime_context().get_node_id()
    except Exception:  # an old Ray, or a driver not connected after all
        return None
