"""Analysis of one source on the Ray actor spine: `Pipeline` starts the stage graph's actors for a source,
`analyze` runs it to the end. `analyze_inline` (in `inline.py`) runs the same graph in one process.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import uuid
from collections.abc import Callable

from models.errors import BadInput
from pipelines.media.detect_source import parse_detect_source
from pipelines.media.preflight import check_source, probe  # noqa: F401  (probe: the file check, re-exported)
from pipelines.media.redact import redact
from pipelines.media.sources import SourceSpec, parse_source, settle_live
from pipelines.spine import graph
from pipelines.spine.options import AnalyzeOptions
from pipelines.stages.config import no_picture
from pipelines.stages.grounding import checkpoint_path
from pipelines.stages.parser import prefm_checkpoint


def _unwrap(exc: BaseException) -> BaseException:
    """Ray wraps actor exceptions; return the user-facing cause when it is one of ours."""
    cause = getattr(exc, "cause", None)
    while cause is not None and not isinstance(cause, BadInput) and getattr(cause, "cause", None) is not None:
        cause = cause.cause
    return cause if isinstance(cause, BadInput) else exc


class Pipeline:
    """A running actor pipeline for one source. `wait()` blocks until the stream ends and returns the result.

    `actors` maps each graph node's name to its stage host, shared with the driver's other pipelines (this
    one's state there is keyed by `stream`); `ingest` is this stream's own actor, which reads the source and is
    its sink too (`sink` is the same handle: `feed_since`, `latencies`, `result`). `close()` ends it and frees
    the stream's state in the hosts, nothing else.
    """

    def __init__(self, source: str, options: AnalyzeOptions | None = None, job_id: str | None = None,
                 db_path: str | None = None, source_id: str | None = None, source_checked: bool = False):
        import ray

        from pipelines.spine.actors import IngestActor
        from pipelines.spine.hosts import one_host, stage_hosts
        from pipelines.spine.runtime import ensure_ray

        self.options = options = options or AnalyzeOptions()
        spec = parse_source(source, options.rtsp_transport, options.live, options.source_policy)
        network = not options.reconnect.retry_before_data
        if not source_checked:  # fail fast on bad input, before Ray and models
            check_source(spec, options.open_timeout_s, network=network)
        self.spec: SourceSpec = settle_live(spec, options.live, options.open_timeout_s)
        detect = parse_detect_source(options.detect_source, self.spec, options.rtsp_transport, options.source_policy)
        if not source_checked and detect is not None:
            check_source(detect, options.open_timeout_s, network=network)
        if options.grounding.enabled:
            checkpoint_path(options.grounding.checkpoint)
        prefm_checkpoint(options.stages)  # a PreFM checkpoint asked for but missing: say so before starting
        ensure_ray()
        self._ray = ray
        self.started = time.perf_counter()
        self.stream = f"{source_id or self.spec.name}#{uuid.uuid4().hex[:12]}"
        self.nodes = graph.nodes(options)
        self.configs = {node.name: graph.node_config(node, options, self.spec.live) for node in self.nodes}
        self.actors = stage_hosts(self.nodes)
        self.ingest = IngestActor.remote(self.spec, source_id or self.spec.name, options.sample_fps,
                                         options.max_side, options.duration_s, options.reconnect,
                                         options.watchdog_s, options.open_timeout_s, budget=options.budget,
                                         record=options.record, job_id=job_id, db_path=db_path,
                                         webhook=options.webhook, decode_video=graph.reads_frames(options),
                                         detect=detect)
        self.sink = self.ingest  # one process per stream: the ingest actor holds the sink
        try:  # the stream's stages are built (and a host's models loaded) before the first second
            ray.get([self.actors[n].open.remote(self.stream, c) for n, c in self.configs.items()]
                    + [self.sink.ready.remote()])
        except (ray.exceptions.RayActorError, ray.exceptions.RayTaskError) as exc:
            self.close()
            cause = _unwrap(exc)
            if isinstance(cause, BadInput):
                raise cause from None
            raise RuntimeError(f"a model actor failed to start: {exc}") from None
        # every node in one process: the ingest hands it each second whole (`StageHost.second`)
        self.run_ref = self.ingest.run.remote(self.nodes, self.actors, None, self.stream, self.configs,
                                              host=one_host(self.actors))

    def progress(self, timeout: float | None = None) -> dict:
        return self._ray.get(self.ingest.progress.remote(), timeout=timeout)

    def feed(self, since: int = 0, timeout: float | None = None) -> list:
        """The sink's feed items after sequence number `since`, for live subscribers."""
        return self._ray.get(self.sink.feed_since.remote(since), timeout=timeout)

    def picture(self, timeout: float | None = None) -> dict | None:
        """The latest analysed picture and its own boxes (with `StageConfig.keep_picture`), or None."""
        return self._ray.get(self.sink.picture.remote(), timeout=timeout)

    def info(self, timeout: float = 30.0) -> dict | None:
        """What the source holds once connected (`has_video`, `has_audio`, ...), None if it has not connected
        within `timeout` seconds."""
        return self._ray.get(self.ingest.info.remote(timeout), timeout=timeout + 10)

    def latencies(self, timeout: float | None = None) -> list[float]:
        """Seconds from each segment's completion to its record reaching the sink."""
        return self._ray.get(self.sink.latencies.remote(), timeout=timeout)

    def stop(self) -> None:
        self.ingest.stop.remote()

    def set_watches(self, standing: list[str], timeout: float = 10.0) -> None:
        """Replace the standing queries of this running stream from its next second on; BadInput when it runs
        without the grounding stage."""
        if "grounding" not in self.configs:
            raise BadInput("this stream runs without the grounding model, so it cannot take watches")
        config = dataclasses.replace(self.configs["grounding"], standing=list(standing))
        self._ray.get(self.ingest.set_config.remote("grounding", config), timeout=timeout)
        self.configs["grounding"] = config

    def set_layout(self, zones: tuple, lines: tuple, timeout: float = 10.0) -> None:
        """Replace the zones and lines of this running stream from its next second on (tracks go on); BadInput
        when it runs without tracking."""
        if "tracking" not in self.configs:
            raise BadInput("this stream runs without tracking: add it with zones, lines or \"track\": true")
        config = dataclasses.replace(self.configs["tracking"], zones=tuple(zones), lines=tuple(lines))
        self._ray.get(self.ingest.set_config.remote("tracking", config), timeout=timeout)
        self.configs["tracking"] = config
        if "grounding" in self.configs:  # watches naming a zone follow the new zones
            grounding = dataclasses.replace(self.configs["grounding"], zones=tuple(z.name for z in zones))
            self._ray.get(self.ingest.set_config.remote("grounding", grounding), timeout=timeout)
            self.configs["grounding"] = grounding

    def done(self, timeout: float = 0.0) -> bool:
        ready, _ = self._ray.wait([self.run_ref], timeout=timeout)
        return bool(ready)

    def wait(self, progress: Callable[[dict], None] | None = None,
             stop_event: threading.Event | None = None) -> dict:
        """Block until the stream ends; `progress` gets `self.progress()` twice a second (`app.progress`), and
        setting `stop_event` (e.g. from a SIGINT handler) ends a live source."""
        ray = self._ray
        stopping = False
        while not self.done(0.5):
            if stop_event is not None and stop_event.is_set() and not stopping:
                self.stop()
                stopping = True
            if progress is not None:
                progress(self.progress())
        try:
            out = ray.get(self.run_ref)
        except ray.exceptions.RayTaskError as exc:
            raise _unwrap(exc) from None
        info = out["info"] or {}
        wall = time.perf_counter() - self.started
        stats = out["stats"]
        clocks = dict(zip(self.actors, ray.get([a.timings.remote(self.stream) for a in self.actors.values()]),
                          strict=True))
        timings = graph.stage_timings(out["reader"], {name: c["busy_s"] for name, c in clocks.items()},
                                      {name: c["parts"] for name, c in clocks.items()},
                                      {"submit_s": out["call_s"], "wait_s": out["wait_s"]})
        timings["node_id"] = out["node_id"]  # where the source was read
        result = ray.get(self.sink.result.remote(info.get("duration_s") if not self.spec.live else None,
                                                 bool(info.get("has_audio")), bool(info.get("has_video")),
                                                 wall, stats, timings))
        result["timings"]["ray_call_s"] = round(out["call_s"], 4)
        if "budget" in out:
            result["budget"] = out["budget"]
        return result

    def close(self, timeout: float = 30.0) -> None:
        """End this stream's actor, free its state in the shared hosts and give them back (the hosts end a
        short while after no pipeline uses them: `release_hosts`). Closing twice is harmless."""
        from pipelines.spine.hosts import release_hosts

        if getattr(self, "ingest", None) is not None:
            self._ray_kill(self.ingest)
        hosts = getattr(self, "actors", {})
        if hosts:
            self._ray.wait([h.close.remote(self.stream) for h in hosts.values()], num_returns=len(hosts),
                           timeout=timeout)
        if hosts and not getattr(self, "_released", False):
            self._released = True
            release_hosts([n for n in graph.GRAPH if n.name in hosts])

    @staticmethod
    def _ray_kill(handle) -> None:
        import ray
        try:
            ray.kill(handle, no_restart=True)
        except Exception:  # already gone
            pass


def analyze(source: str, options: AnalyzeOptions | None = None, progress: Callable[[dict], None] | None = None,
            job_id: str | None = None, db_path: str | None = None,
            stop_event: threading.Event | None = None, source_checked: bool = False) -> dict:
    """Run `source` through the actor pipeline and return the result dict (`source_checked`: the caller has
    already run `check_source` on it)."""
    pipeline = Pipeline(source, options, job_id=job_id, db_path=db_path, source_checked=source_checked)
    try:
        if options is not None and options.stages.track:  # a live source is only known once it connects
            info = pipeline.info(timeout=30)
            if info is not None and not info.get("has_video"):
                pipeline.stop()
                raise BadInput(no_picture(redact(source)))
        return pipeline.wait(progress, stop_event)
    finally:
        pipeline.close()
