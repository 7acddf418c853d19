"""The stage graph inline, in the calling process: the CLI on a file or one camera, batch tasks, API jobs, tests.

Same graph, same stages, same sink as the Ray runner (`actors.py`), so both give identical results. Each node
runs on its own worker thread (`NodeThreads`), as each has its own actor on Ray: a node takes its seconds in
order, one at a time, and starts a second as soon as its inputs are ready, so visual works on one second while
speech and audio work on the next. The heavy parts (decoding, the detector, pose, Whisper, YAMNet) release
the GIL, so the nodes share the cores. Stages are built on their own threads too: the safety stage's imports
overlap the first seconds' analysis.

A live source gets what the Ray runner's ingest actor gives it: at most `LIVE_IN_FLIGHT` seconds in the graph
(a slow graph makes the reader drop its oldest seconds, counted, instead of falling behind the camera), the
opt-in latency budget (`budget.BudgetHook`), and a tracked camera with no picture ends once it connects.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from models.errors import BadInput
from pipelines.media.detect_source import make_reader, parse_detect_source
from pipelines.media.sources import parse_source, settle_live
from pipelines.sinks.sink import Sink
from pipelines.spine import graph
from pipelines.spine.options import AnalyzeOptions
from pipelines.spine.threads import pin_threads
from pipelines.stages.config import StageConfig, no_picture
from pipelines.stages.grounding import checkpoint_path
from pipelines.stages.parser import prefm_checkpoint
from pipelines.stages.record import Second

if TYPE_CHECKING:
    from pipelines.sinks.store import Store

IN_FLIGHT = 32  # seconds in the graph at once: more than a speech span, so Whisper's turn stalls no node; memory stays small
LIVE_IN_FLIGHT = 4  # a live source: as the Ray ingest's `max_inflight` (Whisper runs behind the seconds there)


class StageCache:
    """Stages with a `reset()` (speech, audio, visual, safety) keep their loaded models between the sources a
    worker process analyzes under one configuration (and one kind of source: live or not, `graph.node_config`);
    they are reset for each new source. The others are built fresh per source. Safe to call from the nodes'
    threads at once."""

    def __init__(self) -> None:
        self.config: tuple[StageConfig, bool] | None = None
        self.stages: dict[str, object] = {}
        self._lock = threading.Lock()

    def get(self, node: graph.Node, options: AnalyzeOptions, live: bool = False):
        with self._lock:
            if (options.stages, live) != self.config:
                self.stages.clear()
                self.config = (replace(options.stages), live)
            stage = self.stages.get(node.name)
        if stage is None:
            stage = graph.build_stage(node, graph.node_config(node, options, live))
            if not hasattr(stage, "reset"):
                return stage
            with self._lock:
                self.stages[node.name] = stage
        stage.reset()
        return stage


PROCESS_CACHE = StageCache()  # a batch worker reuses its models across the files it analyzes


def _resolved(fn: Callable, args: list) -> Any:
    """Call `fn` once its arguments that are other nodes' futures have their values."""
    return fn(*[a.result() if isinstance(a, Future) else a for a in args])


class NodeThreads:
    """One worker thread per node: `submit` queues a call on the node's thread and returns its future."""

    def __init__(self, nodes: list[graph.Node]):
        self.pools = {n.name: ThreadPoolExecutor(1, thread_name_prefix=f"stage-{n.name}") for n in nodes}

    def submit(self, name: str, fn: Callable, args: list) -> Future:
        return self.pools[name].submit(_resolved, fn, args)

    def close(self) -> None:
        for pool in self.pools.values():
            pool.shutdown(wait=True, cancel_futures=True)


def analyze_inline(source: str, options: AnalyzeOptions | None = None,
                   progress: Callable[[dict], None] | None = None, cache: StageCache = PROCESS_CACHE,
                   stop_event: threading.Event | None = None, job: tuple[str, Store] | None = None) -> dict:
    """Analyze `source` in this process and return the result dict.

    `progress`, if given, is called after each second with what `Pipeline.progress` gives on Ray: `position`
    (seconds analysed), `duration` (None for a live source or an unknown length) and the ingest `stats`.
    Setting `stop_event` (e.g. from a SIGINT handler) ends the source early; the seconds read so far are kept.
    `job`, `(job_id, store)`: the review feed's cards go to that store as they come (the rows come with the
    result the caller saves).
    """
    options = options or AnalyzeOptions()
    spec = settle_live(parse_source(source, options.rtsp_transport, options.live, options.source_policy),
                       options.live, options.open_timeout_s)
    detect = parse_detect_source(options.detect_source, spec, options.rtsp_transport, options.source_policy)
    if options.grounding.enabled:  # a checkpoint asked for but missing: say so before anything starts
        checkpoint_path(options.grounding.checkpoint)
    prefm_checkpoint(options.stages)
    started = time.perf_counter()
    nodes = graph.nodes(options)
    threads = NodeThreads(nodes)
    clock = graph.StageClock()

    def build(node: graph.Node):
        stage = cache.get(node, options, spec.live)
        pin_threads()  # again once a stage has loaded its libraries (torch, CTranslate2): threadpoolctl sees them
        clock.begin(node.name, stage)
        return stage

    stages = {node.name: threads.submit(node.name, build, [node]) for node in nodes}
    sink = Sink(spec.name, webhook=options.webhook, live=spec.live, **({} if job is None else
                                                      {"job_id": job[0], "store": job[1], "live_rows": False}))
    reader = make_reader(spec, spec.name, detect, sample_fps=options.sample_fps, max_side=options.max_side,
                         duration_s=options.duration_s, policy=options.reconnect, watchdog_s=options.watchdog_s,
                         open_timeout_s=options.open_timeout_s, record=options.record,
                         decode_video=graph.reads_frames(options)).start()
    budget = live_budget(options, spec.live, reader)
    in_flight = LIVE_IN_FLIGHT if spec.live else IN_FLIGHT

    def call(node: graph.Node, method: str, args: list) -> Future:
        return threads.submit(node.name, lambda *a: clock.call(node.name, stages[node.name].result(), method,
                                                                list(a)), args)

    pending: deque[tuple[float, Future]] = deque()
    stopped_at: float | None = None  # end of the last second taken into the graph, on a stop request

    def deliver(keep: int) -> None:
        """Write finished seconds in order: every one already done, then wait until at most `keep` remain."""
        while pending and (len(pending) > keep or pending[0][1].done()):
            end, record = pending.popleft()
            sink.write(record.result())
            if progress is not None:
                info = reader.info
                progress({"position": float(end), "duration": None if spec.live or info is None else info.duration_s,
                          "stats": reader.stats.to_dict()})

    try:
        if options.stages.track and spec.live:
            refuse_without_picture(reader, spec.name)
        last_end = 0.0
        while (seg := reader.get()) is not None:
            if stop_event is not None and stop_event.is_set():
                if not spec.live:  # a file: the seconds already in the graph still finish; the reader's later
                    stopped_at = last_end  # ones are not analyzed, and the result says so
                    break
                reader.stop()  # a camera ends as on Ray: the reader closes its last second, and what it holds is
                # analysed (its health: ended)
            if budget is not None:
                seg = budget.apply(seg)
            record = graph.step(nodes, call, seg, Second.of(seg))
            if budget is not None:
                budget.track(seg, record)
            pending.append((seg.end, record))
            last_end = float(seg.end)
            deliver(in_flight)
        reader.stop()
        deliver(0)
        sink.write(graph.finish(nodes, call).result())
    finally:
        reader.stop()
        threads.close()
    if stopped_at is not None:
        reader.stats.analysed_until = stopped_at
        reader.stats.warnings.append(f"stopped on request after {stopped_at:.1f} s")
    info = reader.info
    built = {name: future.result() for name, future in stages.items()}
    timings = graph.stage_timings(reader.timings, clock.busy,
                                  {name: clock.parts(name, stage) for name, stage in built.items()})
    node_id = ray_node_id()
    if node_id is not None:
        timings["node_id"] = node_id
    result = sink.result(info.duration_s if info and not spec.live else None, bool(info and info.has_audio),
                         bool(info and info.has_video), time.perf_counter() - started, reader.stats.to_dict(), timings)
    if budget is not None:
        result["budget"] = budget.summary()
    return result


def live_budget(options: AnalyzeOptions, live: bool, reader):
    """The latency budget's hook for a live source when one is asked for (files are not real time), reporting
    its level in the reader's statistics as the Ray ingest does; else None."""
    if options.budget is None or not live:
        return None
    from pipelines.spine.budget import BudgetHook

    return BudgetHook(options.budget, options.sample_fps, stats=reader.stats)


def refuse_without_picture(reader, name: str, timeout_s: float = 30.0) -> None:
    """Tracking needs a picture, and a live source shows whether it has one only once it connects: end it with
    the reason if it has none (a source not connected within `timeout_s` goes on, as on Ray)."""
    info = reader.wait_info(timeout_s)
    if info is not None and not info.has_video:
        reader.stop()
        raise BadInput(no_picture(name))


def ray_node_id() -> str | None:
    """The Ray node this process runs on (a batch task, an API job), or None outside Ray."""
    ray = sys.modules.get("ray")  # never import Ray just to ask
    if ray is None or not ray.is_initialized():
        return None
    try:
        return ray.get_runtime_context().get_node_id()
    except Exception:  # an old Ray, or a driver not connected after all
        return None
