"""The shared stage hosts on Ray: a few processes, each holding some graph nodes for every stream of the driver.

Each node names its host (`graph.Node.host`): the picture's models in one process, everything else in another,
so a node costs its models and not another Python, Ray worker and set of libraries (about 100 MB a process). On a
machine of up to 2 CPUs every node shares one process (`host_of`, FORESIGHT_STAGE_HOSTS).
Inside a host each node keeps its own turns (`fair.FairTurns`): one call of a node at a time, each stream's
calls in their order, the stream that has had the least of that node's time first, while the other nodes of
the host run on other threads (their models release the GIL). A host keeps one stage object per (node, stream),
created on the stream's first call and freed by `close`; the models inside come from one process-wide cache
(`models/shared.py`). Calls carry the stream's stage config, so a host that restarted after a crash rebuilds a
stage on the next call (what the dead process held for that stream is lost; the stream goes on).

Callers see one handle per node (`NodeHandle`): `handle.process.remote(stream, seq, config, ...)` is the host's
`process(node, stream, seq, config, ...)`. Hosts end a short while after the last stream closes (`release_hosts`).
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor

import ray

from models.errors import BadInput
from pipelines.spine import graph
from pipelines.spine.fair import FairTurns
from pipelines.spine.threads import pin_threads

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


@ray.remote(**STAGE_OPTIONS, max_concurrency=128)  # threads wait for their node's turn
class StageHost:
    """Some nodes of the stage graph for many streams, in one process (one intra-op thread per model)."""

    def __init__(self, nodes: tuple[graph.Node, ...]):
        pin_threads()  # FORESIGHT_THREADS reaches a remote cluster's workers through the runtime_env
        self.nodes = {n.name: n for n in nodes}
        self.stages: dict[tuple[str, str], object] = {}  # (node, stream) -> stage
        self.clocks: dict[tuple[str, str], graph.StageClock] = {}
        self.closed: deque[tuple[str, str]] = deque(maxlen=4096)  # late calls must not revive a closed stream
        self.turns = {name: FairTurns(prefetch=lambda inputs, name=name: self._prefetch(name, inputs))
                      for name in self.nodes}
        # `second`'s node calls: each waits for its inputs and its turn, so no bound (a bounded pool could fill
        # with calls waiting on calls queued behind them); idle threads are reused
        self._calls = ThreadPoolExecutor(max_workers=4096, thread_name_prefix="node")

    def ready(self) -> bool:
        return True

    def _stage(self, node: str, stream: str, config):
        key = (node, stream)
        stage = self.stages.get(key)
        if stage is None:
            if key in self.closed:
                raise StreamClosed(f"stream {stream} was closed")
            stage = self.stages[key] = graph.build_stage(self.nodes[node], config)
            self.clocks[key] = graph.StageClock()
        return stage

    def _call(self, node: str, stream: str, config, method: str, args: tuple):
        stage = self._stage(node, stream, config)
        if hasattr(stage, "reconfigure") and stage.config != config:  # e.g. watches changed on a running stream
            stage.reconfigure(config)
        return self.clocks[(node, stream)].call(node, stage, method, list(args))

    def open(self, node: str, stream: str, config) -> bool:
        """Build the stream's stage now (its models load here), so a start-up failure is seen at start."""
        self.turns[node].start(stream)

        def build() -> bool:
            fresh = (node, stream) not in self.stages
            self._stage(node, stream, config)
            if fresh:
                trim_heap()  # what loading the models (the first stream) or building the stage left free
            return True

        return self.turns[node].run(stream, None, build)

    def process(self, node: str, stream: str, seq: int, config, *args):
        """Second number `seq` of `stream` through its stage of `node`."""
        return self.turns[node].run(stream, seq, lambda: self._call(node, stream, config, "process", args),
                                    batch_input=lambda: self._batch_input(node, stream, args))

    def second(self, stream: str, seq: int, configs: dict, names: list[str], segment, record):
        """Second number `seq` of `stream` through the nodes `names` (all hosted here), in one call: each node's
        call runs on a thread of its own (`process`, so the turns and cross-stream batches are the same) as soon
        as its inputs are ready, and nothing between them goes through Ray. Returns the final record."""
        nodes = [self.nodes[name] for name in names]

        def call(node: graph.Node, method: str, args: list) -> Future:
            return self._calls.submit(self._when_ready, node.name, stream, seq, configs[node.name], args)

        return graph.step(nodes, call, segment, record).result()

    def _when_ready(self, node: str, stream: str, seq: int, config, args: list):
        inputs = [a.result() if isinstance(a, Future) else a for a in args]  # (an earlier node's failure raises)
        return self.process(node, stream, seq, config, *inputs)

    def _batch_input(self, node: str, stream: str, args: tuple):
        """What this stream's next call would hand a model that batches across streams (None: nothing)."""
        fn = getattr(self.stages.get((node, stream)), "batch_input", None)  # a stage not built yet joins no batch
        return None if fn is None else fn(*args)

    def _prefetch(self, node: str, inputs: list) -> None:
        stage = next((s for (n, _), s in self.stages.items() if n == node), None)
        if stage is not None and hasattr(stage, "prefetch"):
            stage.prefetch(inputs)

    def batches(self, node: str) -> list[int]:
        """The size of each cross-stream batch `node` ran here (a restart starts the list afresh)."""
        return list(self.turns[node].batches)

    def finish(self, node: str, stream: str, seq: int, config, *args):
        """The end of `stream` at `node` (`seq`: one past its last second)."""
        return self.turns[node].run(stream, seq, lambda: self._call(node, stream, config, "finish", args))

    def timings(self, node: str, stream: str) -> dict:
        """Seconds in this stream's calls of `node` and in its stage's parts (a restart starts them afresh)."""
        stage, clock = self.stages.get((node, stream)), self.clocks.get((node, stream))
        if stage is None or clock is None:
            return {"busy_s": 0.0, "parts": {}}
        return {"busy_s": clock.busy.get(node, 0.0), "parts": graph.stage_parts(stage)}

    def close(self, node: str, stream: str) -> bool:
        """Free the stream's state at `node`; True if it held any. Models and the other streams are untouched."""
        key = (node, stream)

        def free() -> bool:
            self.closed.append(key)
            self.clocks.pop(key, None)
            stage = self.stages.pop(key, None)
            if stage is not None and hasattr(stage, "close"):
                stage.close()
            if stage is not None:
                del stage
                trim_heap()
                return True
            return False

        held = self.turns[node].run(stream, None, free)
        self.turns[node].forget(stream)
        return held

    def streams(self, node: str) -> list[str]:
        """The streams whose state `node` holds here."""
        return [s for n, s in self.stages if n == node]

    def pid(self, node: str | None = None) -> int:
        return os.getpid()


class NodeHandle:
    """One node's view of its host: `handle.METHOD.remote(*args)` calls the host's `METHOD(node, *args)`."""

    def __init__(self, host, node: str):
        self.host, self.node = host, node

    def __getattr__(self, method: str):
        if method.startswith("_"):
            raise AttributeError(method)
        return _Bound(getattr(self.host, method), self.node)

    def __eq__(self, other) -> bool:
        return isinstance(other, NodeHandle) and (self.host, self.node) == (other.host, other.node)

    def __hash__(self) -> int:
        return hash((self.host, self.node))

    def __reduce__(self):
        return NodeHandle, (self.host, self.node)


class _Bound:
    def __init__(self, method, node: str):
        self.method, self.node = method, node

    def remote(self, *args, **kwargs):
        return self.method.remote(self.node, *args, **kwargs)


_HELD: dict[str, object] = {}  # host name -> the handle that created it: Ray ends an actor once its creator's is gone
_HELD_LOCK = threading.Lock()
_USERS: dict[str, int] = {}  # host name -> pipelines of this driver using it now
_RELEASE: list[threading.Timer] = []  # the pending end of idle hosts (at most one)


def host_linger_s() -> float:
    """Seconds the hosts stay after the last pipeline using them closed (a next stream or upload within it
    finds the models loaded); FORESIGHT_HOST_LINGER_S, default 30."""
    try:
        return max(0.0, float(os.environ.get("FORESIGHT_HOST_LINGER_S", "30")))
    except ValueError:
        return 30.0


HOSTS_ENV = "FORESIGHT_STAGE_HOSTS"  # "one", "split" or "auto" (the default)
NODE_CALLS_ENV = "FORESIGHT_NODE_CALLS"  # "1": one Ray call per node and second even in one host
ONE_HOST_MAX_CPUS = 2  # "auto": every node in one process on a local cluster of up to this many CPUs


def host_of(node: graph.Node) -> str:
    """The process `node` runs in: its declared host (`graph.Node.host`: the picture's models apart), or one
    process for every node. One process saves a Python, a Ray worker and their libraries (0.19-0.23 GB) at the same
    CPU and latency on 2 cores (docs/performance.md, session 27), so "auto" takes it for a local cluster of up to
    `ONE_HOST_MAX_CPUS` CPUs; with more, or a cluster named by RAY_ADDRESS, the declared hosts share the GIL less."""
    choice = os.environ.get(HOSTS_ENV, "auto").strip().lower() or "auto"
    if choice not in ("one", "split", "auto"):
        raise BadInput(f"{HOSTS_ENV} must be one, split or auto, not {choice!r}")
    if choice == "auto":
        local = not os.environ.get("RAY_ADDRESS")
        choice = "one" if local and (os.cpu_count() or 1) <= ONE_HOST_MAX_CPUS else "split"
    return "all" if choice == "one" else node.host


def stage_hosts(nodes: list[graph.Node]) -> dict[str, NodeHandle]:
    """Each node's handle on its shared host (node name -> `NodeHandle`); the first pipeline that needs a host
    starts it with every graph node it hosts. Each call takes one use of the hosts, which `release_hosts` gives
    back.

    Hosts are named actors owned by the driver: every pipeline it starts finds the same ones and their models
    stay loaded between streams. Once no pipeline uses them they end `host_linger_s()` later (a server idle
    after Stop holds no stage processes). A host that is gone for good (restarts spent, or a new Ray session)
    is replaced.
    """
    with _HELD_LOCK:
        for timer in _RELEASE:
            timer.cancel()
        _RELEASE.clear()
        for host in dict.fromkeys(host_of(n) for n in nodes):
            _USERS[host] = _USERS.get(host, 0) + 1
            name = HOST_PREFIX + host
            try:
                ray.get_actor(name)
                if host in _HELD:
                    continue  # keep the creating handle: a handle from get_actor does not keep the actor alive
            except ValueError:  # none, or dead for good
                pass
            hosted = tuple(n for n in graph.GRAPH if host_of(n) == host)
            _HELD[host] = StageHost.options(name=name, get_if_exists=True).remote(hosted)
        return {node.name: NodeHandle(_HELD[host_of(node)], node.name) for node in nodes}


def one_host(handles: dict[str, NodeHandle]):
    """The host every node runs in when they share one (its `second` takes a whole second in one call), else
    None. FORESIGHT_NODE_CALLS=1 makes one call per node and second anyway (the benchmarks' reference)."""
    hosts = {h.host for h in handles.values()}  # (Ray's handles compare by actor)
    if len(hosts) != 1 or os.environ.get(NODE_CALLS_ENV, "") == "1":
        return None
    return next(iter(hosts))


def release_hosts(nodes: list[graph.Node]) -> None:
    """Give back one use of the hosts of `nodes` (a pipeline closed); when none is used any more, end them all
    after `host_linger_s()` unless a pipeline takes them again meanwhile."""
    with _HELD_LOCK:
        for host in dict.fromkeys(host_of(n) for n in nodes):
            if _USERS.get(host, 0) > 0:
                _USERS[host] -= 1
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
        names = [HOST_PREFIX + host for host in _HELD]
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
