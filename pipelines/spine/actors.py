"""The stage graph on Ray: one `StageHost` per graph node shared by every stream of the driver (ended a short
while after the last stream closes: `release_hosts`), and per stream one `IngestActor` that reads the source, chains the hosts and is the stream's sink.

A host keeps one stage object per stream (VAD spans, PreFM ring buffer, pose tracks, grounding watches, safety
log), created on the stream's first call and freed by `close(stream)`; the models inside come from one
process-wide cache (`models/shared.py`), so a second stream costs its state, not another torch and another
set of weights. Calls carry the stream's stage config, so a host that restarted after a crash rebuilds the
stage on the next call (what the dead process held for that stream is lost; the stream goes on).

The ingest actor passes ObjectRefs from one actor call into the next, so segment data moves between actor
processes without a round trip through the driver; a thread of it writes each record into its sink as soon
as the record is ready (`delivery.py`). A host runs one call at a time, each stream's calls in
their order, the stream that has had the least of the host's time first (`fair.FairTurns`): a stream whose
seconds cost more than its share falls behind and drops its own oldest seconds, not the others'. Hosts
restart after a crash (`max_restarts`) and their in-flight calls are retried.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from collections import deque

import ray

from pipelines.media.ingest import ReconnectPolicy, SegmentReader
from pipelines.media.sources import SourceSpec
from pipelines.sinks.sink import Sink
from pipelines.spine import graph
from pipelines.spine.delivery import Delivery
from pipelines.spine.fair import FairTurns
from pipelines.spine.threads import pin_threads
from pipelines.stages.record import Second

# The hosts reserve no CPU: they live as long as their driver (a server keeps them after its streams end), and
# five or six quarter-CPU reservations left a 2-CPU node unable to schedule the one-CPU job and batch tasks, so an
# upload after a live stream waited forever. Their load shows as the streams' dropped seconds and budget instead.
STAGE_OPTIONS = dict(max_restarts=3, max_task_retries=3, num_cpus=0)
HOST_PREFIX = "foresight-stage-"


def trim_heap() -> None:
    """Hand the heap's free pages back to the system (glibc's `malloc_trim`). Loading a stage's models leaves
    memory free but resident (0.2 GB in the safety host), and so does a stream's state once freed; a trim
    takes milliseconds to tenths of a second, so it is done when a stream starts or ends, not per call."""
    trim = getattr(_LIBC, "malloc_trim", None)
    if trim is not None:
        trim(0)


try:
    _LIBC = ctypes.CDLL(None)  # this process's symbols: glibc's on Linux
except OSError:  # pragma: no cover (no dynamic libc)
    _LIBC = None


class StreamClosed(RuntimeError):
    """A call for a stream that `close` already freed (a call still queued when its pipeline ended)."""


@ray.remote(**STAGE_OPTIONS, max_concurrency=128)  # threads wait for their turn; one call runs at a time
class StageHost:
    """One node of the stage graph for many streams, in its own process (one intra-op thread)."""

    def __init__(self, node: graph.Node):
        pin_threads()  # FORESIGHT_THREADS reaches a remote cluster's workers through the runtime_env
        self.node = node
        self.stages: dict[str, object] = {}
        self.clocks: dict[str, graph.StageClock] = {}
        self.closed: deque[str] = deque(maxlen=4096)  # recently closed streams: late calls must not revive them
        self.turns = FairTurns(prefetch=self._prefetch)

    def ready(self) -> bool:
        return True

    def _stage(self, stream: str, config):
        stage = self.stages.get(stream)
        if stage is None:
            if stream in self.closed:
                raise StreamClosed(f"stream {stream} was closed")
            stage = self.stages[stream] = graph.build_stage(self.node, config)
            self.clocks[stream] = graph.StageClock()
        return stage

    def _call(self, stream: str, config, method: str, args: tuple):
        stage = self._stage(stream, config)
        if hasattr(stage, "reconfigure") and stage.config != config:  # e.g. watches changed on a running stream
            stage.reconfigure(config)
        return self.clocks[stream].call(self.node.name, stage, method, list(args))

    def open(self, stream: str, config) -> bool:
        """Build the stream's stage now (its models load here), so a start-up failure is seen at start."""
        self.turns.start(stream)

        def build() -> bool:
            fresh = stream not in self.stages
            self._stage(stream, config)
            if fresh:
                trim_heap()  # what loading the models (the first stream) or building the stage left free
            return True

        return self.turns.run(stream, None, build)

    def process(self, stream: str, seq: int, config, *args):
        """Second number `seq` of `stream` through its stage."""
        return self.turns.run(stream, seq, lambda: self._call(stream, config, "process", args),
                              batch_input=lambda: self._batch_input(stream, args))

    def _batch_input(self, stream: str, args: tuple):
        """What this stream's next call would hand a model that batches across streams (None: nothing)."""
        fn = getattr(self.stages.get(stream), "batch_input", None)  # a stage not built yet joins no batch
        return None if fn is None else fn(*args)

    def _prefetch(self, inputs: list) -> None:
        stage = next(iter(self.stages.values()), None)
        if stage is not None and hasattr(stage, "prefetch"):
            stage.prefetch(inputs)

    def batches(self) -> list[int]:
        """The size of each cross-stream batch this host ran (a restart starts the list afresh)."""
        return list(self.turns.batches)

    def finish(self, stream: str, seq: int, config, *args):
        """The end of `stream` (`seq`: one past its last second)."""
        return self.turns.run(stream, seq, lambda: self._call(stream, config, "finish", args))

    def timings(self, stream: str) -> dict:
        """Seconds in this stream's calls and in its stage's parts (a host restart starts them afresh)."""
        stage, clock = self.stages.get(stream), self.clocks.get(stream)
        if stage is None or clock is None:
            return {"busy_s": 0.0, "parts": {}}
        return {"busy_s": clock.busy.get(self.node.name, 0.0), "parts": graph.stage_parts(stage)}

    def close(self, stream: str) -> bool:
        """Free the stream's state; True if it held any. Models and the other streams are untouched."""

        def free() -> bool:
            self.closed.append(stream)
            self.clocks.pop(stream, None)
            stage = self.stages.pop(stream, None)
            if stage is not None and hasattr(stage, "close"):
                stage.close()
            if stage is not None:
                del stage
                trim_heap()
                return True
            return False

        held = self.turns.run(stream, None, free)
        self.turns.forget(stream)
        return held

    def streams(self) -> list[str]:
        """The streams whose state this host holds."""
        return list(self.stages)

    def pid(self) -> int:
        return os.getpid()


_HELD: dict[str, object] = {}  # the handles that created the hosts: Ray ends an actor once its creator's is gone
_HELD_LOCK = threading.Lock()
_USERS: dict[str, int] = {}  # node name -> pipelines of this driver using its host now
_RELEASE: list[threading.Timer] = []  # the pending end of idle hosts (at most one)


def host_linger_s() -> float:
    """Seconds the hosts stay after the last pipeline using them closed (a next stream or upload within it
    finds the models loaded); FORESIGHT_HOST_LINGER_S, default 30."""
    try:
        return max(0.0, float(os.environ.get("FORESIGHT_HOST_LINGER_S", "30")))
    except ValueError:
        return 30.0


def stage_hosts(nodes: list[graph.Node]) -> dict:
    """The shared host of each node (node name -> handle), started by the first pipeline that needs it; each
    call takes one use of them, which `release_hosts` gives back.

    Hosts are named actors owned by the driver: every pipeline it starts finds the same ones and their models
    stay loaded between streams. Once no pipeline uses them they end `host_linger_s()` later (a server idle
    after Stop holds no stage processes). A host that is gone for good (restarts spent, or a new Ray session)
    is replaced.
    """
    with _HELD_LOCK:
        for timer in _RELEASE:
            timer.cancel()
        _RELEASE.clear()
        for node in nodes:
            _USERS[node.name] = _USERS.get(node.name, 0) + 1
            name = HOST_PREFIX + node.name
            try:
                ray.get_actor(name)
                if node.name in _HELD:
                    continue  # keep the creating handle: a handle from get_actor does not keep the actor alive
            except ValueError:  # none, or dead for good
                pass
            _HELD[node.name] = StageHost.options(name=name, get_if_exists=True).remote(node)
        return {node.name: _HELD[node.name] for node in nodes}


def release_hosts(names) -> None:
    """Give back one use of the hosts of `names` (a pipeline closed); when none is used any more, end them all
    after `host_linger_s()` unless a pipeline takes them again meanwhile."""
    with _HELD_LOCK:
        for name in names:
            if _USERS.get(name, 0) > 0:
                _USERS[name] -= 1
        if any(_USERS.values()) or not _HELD:
            return
        for timer in _RELEASE:
            timer.cancel()
        timer = threading.Timer(host_linger_s(), _end_idle_hosts)
        timer.daemon = True
        _RELEASE[:] = [timer]
        timer.start()


def _end_idle_hosts(wait_s: float = 10.0) -> None:
    """End the hosts (under the lock, and until their names are free: a pipeline starting meanwhile must not
    be handed a host that is being killed)."""
    with _HELD_LOCK:
        if any(_USERS.values()):
            return
        _RELEASE.clear()
        names = [HOST_PREFIX + name for name in _HELD]
        for handle in _HELD.values():
            try:
                ray.kill(handle, no_restart=True)
            except Exception:  # already gone, or Ray shut down
                pass
        _HELD.clear()
        deadline = time.monotonic() + wait_s
        while ray.is_initialized() and time.monotonic() < deadline and any(_named(n) for n in names):
            time.sleep(0.1)


def _named(name: str) -> bool:
    try:
        ray.get_actor(name)
        return True
    except Exception:  # ValueError: no such (live) actor
        return False


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
                 db_path: str | None = None, feed_size: int = 1000, webhook=None, decode_video: bool = True):
        self.budget = None  # (no torch here: this actor decodes and dispatches, and stays small)
        if budget is not None:  # opt-in latency budget (spine/budget.py): picks tier and frame rate per second
            from pipelines.spine.budget import BudgetHook

            self.budget = BudgetHook(budget, sample_fps)
        self.reader = SegmentReader(spec, source_id, sample_fps=sample_fps, max_side=max_side,
                                    duration_s=duration_s, policy=policy, watchdog_s=watchdog_s,
                                    open_timeout_s=open_timeout_s, record=record, decode_video=decode_video)
        if self.budget is not None:  # its level goes into the stream's health, never silently
            self.budget.stats = self.reader.stats
        self.sink = Sink(spec.name, job_id, db_path, feed_size, webhook)
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
        return {"position": self.position, "duration": info.duration_s if info else None, "stats": stats}

    def stop(self) -> None:
        self.reader.stop()

    def set_config(self, node: str, config) -> None:
        """The config `node` gets from the next second on (its host's stage adopts it: `reconfigure`)."""
        self.configs[node] = config

    def info(self, timeout: float = 30.0) -> dict | None:
        info = self.reader.wait_info(timeout)
        return None if info is None else info.__dict__

    def run(self, nodes: list[graph.Node], hosts: dict, sink, stream: str, configs: dict,
            max_inflight: int = 4) -> dict:
        """Submit every second through the graph's hosts (node name -> handle) as `stream`, each node with its
        stage config (`configs`: node name -> config), into `sink` (None: this actor's own; else a handle with
        a remote `write`)."""

        seq = 0  # this stream's second number at the hosts (its finish comes last)
        self.configs = {**configs, **self.configs}  # `set_config` may replace one while the stream runs

        def call(node: graph.Node, method: str, args: list):
            return getattr(hosts[node.name], method).remote(stream, seq, self.configs[node.name], *args)

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
                record = graph.step(nodes, call, ray.put(seg), Second.of(seg))
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
