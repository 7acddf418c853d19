"""Prometheus metrics: request latencies, the job queue, and per-stream ingest health read at scrape time.

Stream and queue numbers are collected when `/metrics` is scraped (a custom collector asks the managers), so
nothing has to push counters from inside Ray actors and a removed stream simply disappears from the output.
"""

from __future__ import annotations

import time

import numpy as np
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from app.services.jobs import JobManager
from app.services.streams import StreamManager
from pipelines.spine.budget import LEVELS


class ForesightCollector:
    """Reads the job and stream managers on every scrape."""

    def __init__(self, jobs: JobManager, streams: StreamManager):
        self.jobs = jobs
        self.streams = streams
        self._last: dict[str, tuple[float, int]] = {}  # stream id -> (time, frames read) at the last scrape

    def collect(self):
        pending, running = self.jobs.depth()
        depth = GaugeMetricFamily("foresight_job_queue_depth", "Upload jobs waiting or running", labels=["state"])
        depth.add_metric(["queued"], pending)
        depth.add_metric(["running"], running)
        yield depth
        limit = GaugeMetricFamily("foresight_job_queue_limit", "Jobs the queue holds before answering 429")
        limit.add_metric([], self.jobs.max_queue)
        yield limit
        finished = CounterMetricFamily("foresight_jobs_finished", "Upload jobs finished since start", labels=["status"])
        for status, n in self.jobs.finished.items():
            finished.add_metric([status], n)
        yield finished

        labels = ["stream", "source"]
        fps = GaugeMetricFamily("foresight_stream_fps", "Video frames read per second since the last scrape (decoded, "
                                "or skipped: unused non-reference frames, all when no stage reads pictures)", labels=labels)
        up = GaugeMetricFamily("foresight_stream_up", "1 while the stream's ingest is healthy", labels=labels)
        dropped = CounterMetricFamily("foresight_stream_frames_dropped", "Frames dropped to stay live", labels=labels)
        seg_dropped = CounterMetricFamily("foresight_stream_segments_dropped", "1-s segments dropped", labels=labels)
        reconnects = CounterMetricFamily("foresight_stream_reconnects", "Reconnections after an outage", labels=labels)
        decoded = CounterMetricFamily("foresight_stream_frames_decoded", "Frames decoded", labels=labels)
        segments = CounterMetricFamily("foresight_stream_segments", "1-s segments analysed", labels=labels)
        degraded = GaugeMetricFamily("foresight_stream_degradation_level",
                                     "Under a latency budget: 0 full rate, 1 lowered frame rate, 2 visual stage off",
                                     labels=labels)
        degraded_s = CounterMetricFamily("foresight_stream_degraded_seconds", "Seconds analysed at each degradation "
                                         "level (full, frame_rate, speech+tags)", labels=[*labels, "level"])
        latency = GaugeMetricFamily("foresight_stream_latency_seconds",
                                    "Segment end-to-end latency (ingest to sink) over the last 300 s",
                                    labels=[*labels, "quantile"])
        crossings = CounterMetricFamily("foresight_line_crossings", "Tracked objects crossing a configured line",
                                        labels=[*labels, "line", "label", "direction"])
        zone_events = CounterMetricFamily("foresight_zone_events", "Tracked objects entering, leaving or "
                                          "loitering in a configured zone", labels=[*labels, "zone", "label", "kind"])
        now = time.monotonic()
        live = set()
        for stream in self.streams.list():
            key = [stream.id, stream.source]
            h = self.streams.health(stream)
            stats = h["stats"]
            live.add(stream.id)
            frames = int(stats.get("frames_decoded", 0))
            read = frames + int(stats.get("frames_skipped", 0))
            t0, f0 = self._last.get(stream.id, (now, read))
            self._last[stream.id] = (now, read)
            fps.add_metric(key, (read - f0) / (now - t0) if now > t0 else 0.0)
            up.add_metric(key, 1.0 if stats.get("health") == "live" else 0.0)
            dropped.add_metric(key, int(stats.get("frames_dropped", 0)))
            seg_dropped.add_metric(key, int(stats.get("segments_dropped", 0)))
            reconnects.add_metric(key, int(stats.get("reconnects", 0)))
            decoded.add_metric(key, frames)
            segments.add_metric(key, int(stats.get("segments_emitted", 0)))
            if stats.get("degradation"):  # only streams that run under a latency budget degrade
                state = stats["degradation"]
                degraded.add_metric(key, LEVELS.index(state["level"]))
                for level in LEVELS:
                    degraded_s.add_metric([*key, level], int(state["seconds"].get(level, 0)))
            for kind, name, label, what, n in stats.get("tracking", []):
                (crossings if kind == "crossing" else zone_events).add_metric([*key, name, label, what], n)
            if h["latencies"]:
                lat = np.asarray(h["latencies"], dtype=float)
                for q in (0.5, 0.95):
                    latency.add_metric([*key, str(q)], float(np.quantile(lat, q)))
        for sid in set(self._last) - live:
            del self._last[sid]
        yield from (fps, up, dropped, seg_dropped, reconnects, decoded, segments, degraded, degraded_s, latency,
                   crossings, zone_events)


class Metrics:
    """The app's own registry (so several apps in one process, as in tests, do not collide)."""

    def __init__(self, jobs: JobManager, streams: StreamManager):
        self.registry = CollectorRegistry()
        self.requests = Histogram("foresight_http_request_seconds", "HTTP request latency", ["method", "route", "status"],
                                  registry=self.registry,
                                  buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
        self.server_errors = Counter("foresight_http_server_errors", "Responses with status 500 or above",
                                     registry=self.registry)
        self.rejected = Counter("foresight_uploads_rejected", "Uploads refused, by HTTP status", ["status"],
                                registry=self.registry)
        self.job_seconds = Histogram("foresight_job_seconds", "Upload job time from submit to result",
                                     registry=self.registry, buckets=(1, 2, 5, 10, 30, 60, 120, 300, 600, 1800))
        self.registry.register(ForesightCollector(jobs, streams))
