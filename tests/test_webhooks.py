"""Alerts reach a webhook on loopback as they happen; a dead endpoint never stalls or fails the analysis."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pipelines import AnalyzeOptions, StageConfig, analyze_inline
from pipelines.sinks.webhooks import WebhookConfig
from tests.helpers.cli import free_port
from tests.helpers.web import QuietHandler, serve
from training.media.synth import ClipSpec, write_clip


@pytest.fixture
def receiver():
    received: list[dict] = []

    class Handler(QuietHandler):
        def do_POST(self):  # noqa: N802 (http.server's naming)
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append(json.loads(body))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = serve("127.0.0.1", Handler)
    yield f"http://127.0.0.1:{server.server_address[1]}/hook", received
    server.shutdown()


@pytest.fixture(scope="module")
def dark_clip(tmp_path_factory):
    """Eight seconds of a lens in the dark: the camera-trouble rule should warn after three."""
    path = tmp_path_factory.mktemp("dark") / "dark.mp4"
    return write_clip(path, ClipSpec(8.0, 10, 160, 120, lambda t: np.full((120, 160, 3), 3, np.uint8)))


def options(url: str, kinds=("alerts",)) -> AnalyzeOptions:
    return AnalyzeOptions(stages=StageConfig(asr=False, tags=False, events_model="tags"),
                          webhook=WebhookConfig(url=url, kinds=kinds, timeout_s=2.0, retries=1))


def test_alert_is_posted_to_the_webhook(receiver, dark_clip):
    url, received = receiver
    result = analyze_inline(str(dark_clip), options(url))
    assert result["alerts"], "the dark camera should raise an alert"
    posted = [a for payload in received for a in payload.get("alerts", [])]
    assert posted == result["alerts"]
    assert all(p["source"] == "dark.mp4" for p in received)
    assert result["webhook"] == {"sent": len(received), "failed": 0, "dropped": 0}


def test_dead_webhook_is_counted_not_fatal(dark_clip):
    result = analyze_inline(str(dark_clip), options(f"http://127.0.0.1:{free_port()}/hook"))
    assert result["alerts"] and result["webhook"]["sent"] == 0 and result["webhook"]["failed"] >= 1


def test_bad_webhook_url_is_rejected():
    with pytest.raises(ValueError, match="http"):
        WebhookConfig(url="ftp://example/hook")


def test_failed_deliveries_are_reported_and_fatal_when_strict(dark_clip):
    from tests.helpers.cli import run_cli

    proc = run_cli("analyze", str(dark_clip), "--no-asr", "--no-tags", "--events", "tags", "--quiet",
                   "--webhook", f"http://127.0.0.1:{free_port()}/hook", "--strict-webhooks", timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert "webhook deliveries failed" in proc.stderr and "Traceback" not in proc.stderr
