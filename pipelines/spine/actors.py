"""The stage graph on Ray: one generic `StageActor` per node, a `SinkActor`, and the `IngestActor` that reads
the source and chains the others.

The ingest actor passes ObjectRefs from one actor call into the next, so segment data moves between actor
processes without a round trip through the driver. Stage actors restart after a crash (`max_restarts`) and
their in-flight calls are retried, so the stream goes on.
"""

from __future__ import annotations

import os
import time
from collections import deque

import ray

from pipelines.media.ingest import ReconnectPolicy, SegmentReader
from pipelines.media.sources import SourceSpec
from pipelines.sinks.sink import Sink
from pipelines.spine import graph
from pipelines.stages.config import limit_threads
from pipelines.stages.record import Second

STAGE_OPTIONS = dict(max_restarts=3, max_task_retries=3, num_cpus=0.25)


@ray.remote(**STAGE_OPTIONS)
class StageActor:
    """One node of the stage graph in its own process (one intra-op thread)."""

    def __init__(self, node: graph.Node, config):
        limit_threads(1)
        self.name = node.name
        self.stage = graph.build_stage(node, config)
        self.clock = graph.StageClock()

    def ready(self) -> bool:
        return True

    def process(self, *args):
        return self.clock.call(self.name, self.stage, "process", list(args))

    def finish(self, *args):
        return self.clock.call(self.name, self.stage, "finish", list(args))

    def timings(self) -> dict:
        """Seconds in this stage's calls and in its parts (an actor restart starts them afresh)."""
        return {"busy_s": self.clock.busy.get(self.name, 0.0), "parts": graph.stage_parts(self.stage)}

    def pid(self) -> int:
        return os.getpid()


@ray.remote(max_restarts=3, max_task_retries=3, num_cpus=0.1, max_concurrency=4)
class SinkActor(Sink):
    """The sink in its own process, with a feed for live subscribers."""

    def __init__(self, source: str, job_id: str | None = None, db_path: str | None = None, feed_size: int = 1000,
                 webhook=None):
        super().__init__(source, job_id, db_path, feed_size, webhook)

    def ready(self) -> bool:
        return True


@ray.remote(max_restarts=0, num_cpus=0.25, max_concurrency=4)
class IngestActor:
    """Reads one source and drives the graph; `run` returns the ingest statistics when the stream ends."""

    def __init__(self, spec: SourceSpec, source_id: str, sample_fps: float = 2.0, max_side: int = 640,
                 duration_s: float | None = None, policy: ReconnectPolicy | None = None, watchdog_s: float = 5.0,
                 open_timeout_s: float = 10.0, budget=None):
        limit_threads(1)
        self.budget = None
        if budget is not None:  # opt-in latency budget (spine/budget.py): picks tier and frame rate per second
            from pipelines.spine.budget import BudgetHook

            self.budget = BudgetHook(budget, sample_fps)
        self.reader = SegmentReader(spec, source_id, sample_fps=sample_fps, max_side=max_side,
                                    duration_s=duration_s, policy=policy, watchdog_s=watchdog_s,
                                    open_timeout_s=open_timeout_s)
        self.position = 0.0
        self.call_s = 0.0
        self.wait_s = 0.0

    def progress(self) -> dict:
        info = self.reader.info
        return {"position": self.position, "duration": info.duration_s if info else None,
                "stats": self.reader.stats.to_dict()}

    def stop(self) -> None:
        self.reader.stop()

    def info(self, timeout: float = 30.0) -> dict | None:
        info = self.reader.wait_info(timeout)
        return None if info is None else info.__dict__

    def run(self, nodes: list[graph.Node], actors: dict, sink, max_inflight: int = 4) -> dict:
        """Submit every second through the graph's actors (`actors`: node name -> handle) into `sink`."""

        def call(node: graph.Node, method: str, args: list):
            return getattr(actors[node.name], method).remote(*args)

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
                record = graph.step(nodes, call, ray.put(seg), Second.of(seg))
                inflight.append(sink.write.remote(record))
                if self.budget is not None:
                    self.budget.track(seg, record.future())
                self.call_s += time.perf_counter() - t0
                self.position = seg.end
                t0 = time.perf_counter()
                while len(inflight) > max_inflight:
                    ray.get(inflight.popleft())
                self.wait_s += time.perf_counter() - t0
        finally:
            self.reader.stop()
            # Close whatever is open (a speech span, open events) and wait for the sink to have it all.
            inflight.append(sink.write.remote(graph.finish(nodes, call)))
            t0 = time.perf_counter()
            ray.get(list(inflight))
            self.wait_s += time.perf_counter() - t0
        out = {"stats": self.reader.stats.to_dict(), "call_s": self.call_s, "wait_s": self.wait_s,
               "reader": dict(self.reader.timings), "node_id": ray.get_runtime_context().get_node_id(),
               "info": self.reader.info.__dict__ if self.reader.info else None}
        if self.budget is not None:
            out["budget"] = self.budget.summary()
        return out
