"""Per stream on Ray: one `IngestActor` that reads the source, chains the shared stage hosts (`hosts.py`) and
is the stream's sink.

The ingest actor passes ObjectRefs from one host call into the next, so segment data moves between processes
without a round trip through the driver; a thread of it writes each record into its sink as soon as the
record is ready (`delivery.py`). When every node shares one host (`hosts.one_host`: a machine of up to 2 CPUs),
a second is one call (`StageHost.second`) and nothing between the nodes goes through Ray. Hosts restart after a
crash (`max_restarts`) and their in-flight calls are retried.
"""

from __future__ import annotations

import os
import threading
import time

import ray

from pipelines.media.detect_source import make_reader
from pipelines.media.ingest_stats import ReconnectPolicy
from pipelines.media.sources import SourceSpec
from pipelines.sinks.sink import Sink
from pipelines.spine import graph
from pipelines.spine.delivery import Delivery
from pipelines.stages.record import Second


# A stream's own actor reserves no CPU: the shared stage hosts hold the reservation, so adding a stream is never
# refused for want of logical CPUs (8 streams on a 2-CPU node); overload shows as dropped seconds instead.
@ray.remote(max_restarts=0, num_cpus=0, max_concurrency=6)
class IngestActor:
    """A stream's one process: reads its source, drives the graph, and is its sink (result, store rows, webhook,
    live feed); `run` returns the ingest statistics when the stream ends.

    The sink shares the reader's process because a Ray worker costs ~0.1 GB before it holds anything: one process
    per stream, not two. A crash of this process ends its own stream only; the rows it wrote stay in the store.
    """

    def __init__(self, spec: SourceSpec, source_id: str, sample_fps: float = 2.0, max_side: int = 640,
                 duration_s: float | None = None, policy: ReconnectPolicy | None = None, watchdog_s: float = 5.0,
                 open_timeout_s: float = 10.0, budget=None, record=None, job_id: str | None = None,
                 db_path: str | None = None, feed_size: int = 1000, webhook=None, decode_video: bool = True,
                 detect: SourceSpec | None = None):
        self.budget = None  # (no torch here: this actor decodes and dispatches, and stays small)
        if budget is not None:  # opt-in latency budget (spine/budget.py): picks tier and frame rate per second
            from pipelines.spine.budget import BudgetHook

            self.budget = BudgetHook(budget, sample_fps)
        self.reader = make_reader(spec, source_id, detect, sample_fps=sample_fps, max_side=max_side,
                                  duration_s=duration_s, policy=policy, watchdog_s=watchdog_s,
                                  open_timeout_s=open_timeout_s, record=record, decode_video=decode_video)
        if self.budget is not None:  # its level goes into the stream's health, never silently
            self.budget.stats = self.reader.stats
        self.sink = Sink(spec.name, job_id, db_path, feed_size, webhook, live=spec.live)
        self.sink_lock = threading.Lock()  # the delivery thread writes while Ray's threads read the feed
        self.configs: dict = {}  # node name -> the config its calls carry (set by `run`, changed by `set_config`)
        self.position = 0.0
        self.call_s = 0.0
        self.wait_s = 0.0

    def ready(self) -> bool:
        return True

    def pid(self) -> int:
        return os.getpid()

    def write(self, record: Second) -> int:
        """Take one record into this stream's sink."""
        with self.sink_lock:
            return self.sink.write(record)

    def feed_since(self, seq: int) -> list:
        with self.sink_lock:
            return self.sink.feed_since(seq)

    def latencies(self) -> list[float]:
        with self.sink_lock:
            return self.sink.latencies()

    def picture(self) -> dict | None:
        """The latest analysed picture with its own boxes (`Sink.picture`)."""
        with self.sink_lock:
            return self.sink.picture

    def result(self, *args, **kwargs) -> dict:
        """The sink's result (`Sink.result`)."""
        with self.sink_lock:
            return self.sink.result(*args, **kwargs)

    def progress(self) -> dict:
        info = self.reader.info
        with self.sink_lock:
            counts = [[*key, n] for key, n in self.sink.tracking_counts.items()]
        stats = self.reader.stats.to_dict()
        if counts:  # line crossings and zone events so far (/metrics)
            stats["tracking"] = counts
        duration = info.duration_s if info and not self.reader.spec.live else None  # a camera has no end
        return {"position": self.position, "duration": duration, "stats": stats}

    def stop(self) -> None:
        self.reader.stop()

    def set_config(self, node: str, config) -> None:
        """The config `node` gets from the next second on (its host's stage adopts it: `reconfigure`)."""
        self.configs[node] = config

    def info(self, timeout: float = 30.0) -> dict | None:
        info = self.reader.wait_info(timeout)
        return None if info is None else info.__dict__

    def run(self, nodes: list[graph.Node], hosts: dict, sink, stream: str, configs: dict,
            max_inflight: int = 4, host=None) -> dict:
        """Submit every second through the graph's hosts (node name -> handle) as `stream`, each node with its
        stage config (`configs`: node name -> config), into `sink` (None: this actor's own; else a handle with
        a remote `write`). With `host` (the one host of every node, `hosts.one_host`), a second is one call."""

        seq = 0  # this stream's second number at the hosts (its finish comes last)
        self.configs = {**configs, **self.configs}  # `set_config` may replace one while the stream runs

        def call(node: graph.Node, method: str, args: list):
            return getattr(hosts[node.name], method).remote(stream, seq, self.configs[node.name], *args)

        names = [node.name for node in nodes]

        def step(segment, record):
            if host is None:
                return graph.step(nodes, call, segment, record)
            return host.second.remote(stream, seq, {n: self.configs[n] for n in names}, names, segment, record)

        write = self.write if sink is None else (lambda record: ray.get(sink.write.remote(record)))
        self.reader.start()
        delivery = Delivery(write, max_inflight)
        try:
            while True:
                seg = self.reader.get()
                if seg is None:
                    break
                if self.budget is not None:
                    seg = self.budget.apply(seg)
                t0 = time.perf_counter()
                record = step(ray.put(seg), Second.of(seg))
                seq += 1
                if self.budget is not None:
                    self.budget.track(seg, record.future())
                self.call_s += time.perf_counter() - t0
                self.position = seg.end
                t0 = time.perf_counter()
                delivery.put(record)  # waits while more than max_inflight records are on their way
                self.wait_s += time.perf_counter() - t0
        finally:
            self.reader.stop()
            # Close whatever is open (a speech span, open events) and wait for the sink to have it all.
            delivery.put(graph.finish(nodes, call), wait=False)
            t0 = time.perf_counter()
            delivery.close()
            self.wait_s += time.perf_counter() - t0
        out = {"stats": self.reader.stats.to_dict(), "call_s": self.call_s, "wait_s": self.wait_s,
               "reader": dict(self.reader.timings), "node_id": ray.get_runtime_context().get_node_id(),
               "info": self.reader.info.__dict__ if self.reader.info else None}
        if self.budget is not None:
            out["budget"] = self.budget.summary()
        return out
