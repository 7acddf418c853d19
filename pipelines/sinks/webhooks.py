"""Optional webhook sink: alerts (and, if asked, events and standing-query moments) are POSTed as JSON to a
user's URL as they happen. Delivery runs on a background thread with a bounded queue, a timeout and
retries, so a slow or dead endpoint never stalls the stream; what could not be delivered is counted.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx

from pipelines.media.policy import SourcePolicy, SourceRefused
from pipelines.media.redact import redact
from pipelines.stages.record import Second


@dataclass
class WebhookConfig:
    url: str | None = None
    kinds: tuple[str, ...] = ("alerts",)  # any of "alerts", "events", "moments", "crossings", "zone_events"
    timeout_s: float = 5.0
    retries: int = 2
    queue_size: int = 256
    headers: dict[str, str] = field(default_factory=dict)
    policy: SourcePolicy | None = None  # when set (the server), every delivery's target must pass it

    def __post_init__(self) -> None:
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError(f"webhook URL must be http(s)://, got {redact(self.url)!r}")
        unknown = set(self.kinds) - {"alerts", "events", "moments", "crossings", "zone_events"}
        if unknown:
            raise ValueError(f"unknown webhook kinds {sorted(unknown)}")


class WebhookSender:
    def __init__(self, config: WebhookConfig, source: str):
        self.config = config
        self.source = source
        self.sent = 0
        self.failed = 0
        self.dropped = 0
        self.refused = 0
        self.last_error: str | None = None
        self._queue: queue.Queue = queue.Queue(maxsize=config.queue_size)
        self._thread = threading.Thread(target=self._run, name="webhook", daemon=True)
        self._thread.start()

    def offer(self, record: Second) -> None:
        """Queue what this second produced, if it holds anything the user subscribed to."""
        fields = {"alerts": "alerts", "events": "events_closed", "moments": "moments", "crossings": "crossings",
                  "zone_events": "zone_events"}
        payload = {kind: getattr(record, fields[kind]) for kind in self.config.kinds
                   if getattr(record, fields[kind])}
        if not payload:
            return
        payload.update(source=self.source, time=record.end)
        try:
            self._queue.put_nowait(payload)
        except queue.Full:
            self.dropped += 1

    def _run(self) -> None:
        with httpx.Client(timeout=self.config.timeout_s, headers=self.config.headers) as client:
            while True:
                payload = self._queue.get()
                if payload is None:
                    return
                for attempt in range(self.config.retries + 1):
                    try:
                        url, headers, extensions = self.config.url, {}, {}
                        if self.config.policy is not None:  # after DNS resolution, on every delivery, and the
                            url, headers["Host"] = self.config.policy.pin(url)  # post goes to the checked address
                            extensions["sni_hostname"] = urlsplit(self.config.url).hostname
                        # httpx does not follow redirects unless told to: a 3xx counts as a failure
                        client.post(url, json=payload, headers=headers, extensions=extensions).raise_for_status()
                        self.sent += 1
                        break
                    except SourceRefused as exc:
                        self.failed += 1
                        self.refused += 1
                        self.last_error = f"refused by the source policy ({exc.reason})"
                        break
                    except httpx.HTTPError as exc:
                        if attempt == self.config.retries:
                            self.failed += 1
                            self.last_error = _describe(exc)
                        else:
                            time.sleep(0.5 * 2 ** attempt)

    def close(self, timeout: float = 10.0) -> dict:
        """Deliver what is queued (within `timeout`) and return the delivery counts."""
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            pass
        self._thread.join(timeout)
        out = {"sent": self.sent, "failed": self.failed, "dropped": self.dropped}
        if self.last_error:
            out["last_error"] = self.last_error
        return out


def _describe(exc: Exception) -> str:
    if isinstance(exc, httpx.HTTPStatusError):
        return f"HTTP {exc.response.status_code}"
    return type(exc).__name__
