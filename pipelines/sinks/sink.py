"""Where each second's record goes, for both runners: the result builder, the webhook, the store's rows (as
they close), the review feed's cards (`pipelines.sinks.review`) and a feed for live subscribers."""

from __future__ import annotations

import time
from collections import deque
from typing import TYPE_CHECKING

from pipelines.sinks.results import ResultBuilder
from pipelines.sinks.review import ReviewWriter
from pipelines.sinks.webhooks import WebhookConfig, WebhookSender
from pipelines.stages.record import Second

if TYPE_CHECKING:
    from pipelines.sinks.store import Store


class Sink:
    """Collects one source's records; `result()` builds the design's result schema when the stream ends.

    With `job_id` and `db_path` (or an open `store`), closed rows are appended to that store as they come and
    the review feed's cards are added or merged there; `live_rows=False` keeps only the cards (a file job, whose
    rows come with its saved result). `feed_size` > 0 keeps the last records for live subscribers (`feed_since`).
    A `live` source's result keeps its recent part only (`results.LIVE_SECONDS`): a camera runs for days.
    """

    def __init__(self, source: str, job_id: str | None = None, db_path: str | None = None, feed_size: int = 0,
                 webhook: WebhookConfig | None = None, store: Store | None = None, live_rows: bool = True,
                 live: bool = False):
        self.builder = ResultBuilder(source, live)
        self.webhook = WebhookSender(webhook, source) if webhook is not None and webhook.url else None
        self.job_id = job_id
        self.store = store if job_id else None
        if self.store is None and db_path and job_id:
            from pipelines.sinks.store import Store
            self.store = Store(db_path)
        self.live_rows = live_rows
        self.review = ReviewWriter(self.store, job_id, source) if self.store is not None else None
        self.feed: deque | None = deque(maxlen=feed_size) if feed_size > 0 else None
        self.seq = 0
        # The latest analysed picture with its own boxes, for live views: {"time", "jpeg", "visual", "text"}, all
        # of one second (never in the feed: a JPEG a second would fill it).
        self.picture: dict | None = None
        self.write_s = 0.0  # seconds spent taking records (result rows, store, webhook queue, feed)
        # (kind, line or zone, label, direction or zone event) -> count, for Prometheus: the names are the
        # configured ones and the labels the detector's, so the label sets stay bounded
        self.tracking_counts: dict[tuple[str, str, str, str], int] = {}

    def write(self, record: Second) -> int:
        """Take one record; returns its second's index (-1 for the final record)."""
        t0 = time.perf_counter()
        try:
            return self._write(record)
        finally:
            self.write_s += time.perf_counter() - t0

    def _write(self, record: Second) -> int:
        self.builder.add(record)
        for key in ([("crossing", c["line"], c["label"], c["direction"]) for c in record.crossings]
                    + [("zone", z["zone"], z["label"], z["kind"]) for z in record.zone_events]):
            self.tracking_counts[key] = self.tracking_counts.get(key, 0) + 1
        if self.webhook is not None:
            self.webhook.offer(record)
        if record.picture:
            self.picture = {"time": record.start, "jpeg": record.picture, "visual": record.visual,
                            "text": record.text, "tracks": record.tracked}
        if self.review is not None:
            self.review.write(record, (self.picture or {}).get("jpeg"))
        if self.store is not None and self.live_rows:
            self.store.append_rows(self.job_id, self.builder.source, record.events_closed, record.transcript,
                                   record.alerts + tracking_rows(record), record.moments)
        self.seq += 1
        if self.feed is not None:
            # the final record has no second of its own: its items come at the stream's end
            time_ = record.end if record.end is not None else self.builder.last_end
            self.feed.append((self.seq, {"time": time_, "events": record.events_closed,
                                         "moments": record.moments, "transcript": record.transcript,
                                         "tags": record.tags, "alerts": record.alerts, "visual": record.visual,
                                         "tracks": record.tracked, "crossings": record.crossings,
                                         "zone_events": record.zone_events, "text": record.text,
                                         "speaking_since": record.speaking_since}))
        return record.index if record.index is not None else -1

    def feed_since(self, seq: int) -> list:
        return [item for item in self.feed or () if item[0] > seq]

    def latencies(self) -> list[float]:
        return list(self.builder.latencies)

    def result(self, duration_s: float | None, has_audio: bool, has_video: bool, wall_s: float,
               ingest: dict | None, timings: dict | None = None) -> dict:
        """The result; `timings` (from `graph.stage_timings`, plus e.g. `node_id`) joins `result["timings"]`,
        with the sink's own seconds added to `timings.stages`."""
        extra = {"webhook": self.webhook.close()} if self.webhook is not None else None
        result = self.builder.build(duration_s, has_audio, has_video, wall_s, ingest, extra)
        if timings is not None:
            result["timings"].update(timings)
            result["timings"].setdefault("stages", {})["sink_s"] = round(self.write_s, 4)
        return result


def tracking_rows(record: Second) -> list[dict]:
    """A second's line crossings and zone events as the store's alert rows (severity "info", the rule names
    the kind, the evidence holds the event): they are kept with the job, and a zone removed later keeps them."""
    rows = [{"time": c["time"], "severity": "info", "rule": "line_crossing", "evidence": [c],
             "reason": f"{c['label']} #{c['track_id']} crossed {c['line']} {c['direction'].replace('_', ' ')}"}
            for c in record.crossings]
    rows += [{"time": z["time"], "severity": "info", "rule": z["kind"], "evidence": [z],
              "reason": f"{z['label']} #{z['track_id']} {z['kind'].replace('_', ' ')} {z['zone']}"}
             for z in record.zone_events]
    return rows
