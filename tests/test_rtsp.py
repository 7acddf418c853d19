"""Live RTSP on loopback: reconnect after the server is killed and restarted, actor crash recovery, dead streams."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time

import pytest
import ray

from pipelines import AnalyzeOptions, Pipeline, StageConfig
from pipelines.media.ingest import SegmentReader
from pipelines.media.ingest_stats import ReconnectPolicy
from tests.helpers.cli import FORESIGHT, ROOT

pytestmark = pytest.mark.slow


def live_options(duration: float, budget: float = 30.0) -> AnalyzeOptions:
    return AnalyzeOptions(stages=StageConfig(asr=False), duration_s=duration, rtsp_transport="udp", watchdog_s=5.0,
                          reconnect=ReconnectPolicy(initial_s=0.3, max_s=1.0, outage_budget_s=budget))


def wait_position(pipe: Pipeline, at_least: float, timeout: float = 60) -> dict:
    deadline = time.time() + timeout
    while time.time() < deadline:
        prog = pipe.progress()
        if prog["position"] >= at_least:
            return prog
        time.sleep(0.2)
    raise AssertionError(f"stream did not reach {at_least} s: {prog}")


def test_reconnects_after_server_restart_and_reports_lost_seconds(rtsp_server, ray_runtime):
    # 24 s: the stream resumes at the last data plus the outage (the watchdog's 5 s, the server's restart, the
    # reconnect), which passed 16 s on a loaded machine and ended the stream before any second after the gap
    pipe = Pipeline(rtsp_server.url, live_options(duration=24.0))
    try:
        wait_position(pipe, 4.0)
        rtsp_server.kill()
        time.sleep(3.0)
        rtsp_server.start()
        result = pipe.wait()
    finally:
        pipe.close()
    ingest = result["ingest"]
    assert ingest["reconnects"] >= 1
    assert ingest["lost_seconds"] >= 2.0, ingest
    gap_end = ingest["lost_intervals"][0][1]
    assert ingest["health"] == "ended" and result["duration_s"] >= 24.0
    # segments kept coming after the gap: sound events exist after it
    assert any(e["start"] >= gap_end for e in result["events"]), result["events"]


def test_stage_actor_crash_restarts_and_stream_goes_on(rtsp_server, ray_runtime):
    pipe = Pipeline(rtsp_server.url, live_options(duration=12.0))
    try:
        wait_position(pipe, 3.0)
        old_pid = ray.get(pipe.actors["speech"].pid.remote())
        os.kill(old_pid, signal.SIGKILL)
        result = pipe.wait()
        new_pid = ray.get(pipe.actors["speech"].pid.remote())
        latencies = ray.get(pipe.sink.latencies.remote())
    finally:
        pipe.close()
    assert new_pid != old_pid
    assert result["ingest"]["segments_emitted"] >= 12
    assert len(latencies) >= 11  # every second reached the sink, the ones after the crash included


class LiveCli:
    """The CLI on a live URL with plain progress lines on stderr, read on a thread."""

    def __init__(self, *args: str):
        self.lines: list[str] = []
        self.proc = subprocess.Popen([*FORESIGHT, "analyze", *args, "--progress", "plain", "-q"], cwd=ROOT,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.reader = threading.Thread(target=lambda: self.lines.extend(iter(self.proc.stderr.readline, "")),
                                       daemon=True)
        self.reader.start()

    def wait_position(self, seconds: float, timeout: float = 120) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            for line in list(self.lines):
                m = re.match(r"progress: (\d+) s, live", line)
                if m and int(m.group(1)) >= seconds:
                    return
            time.sleep(0.2)
        self.proc.kill()
        raise AssertionError(f"the stream never reached {seconds} s: {self.lines[-5:]}")

    def finish(self, timeout: float = 60) -> tuple[int, str]:
        try:
            self.proc.wait(timeout=timeout)
        finally:
            self.proc.kill()
        self.reader.join(5)
        return self.proc.returncode, "".join(self.lines)


def test_stream_that_stops_sending_exits_2_with_partial_results(rtsp_server, tmp_path):
    out = tmp_path / "partial.json"
    cli = LiveCli(rtsp_server.url, "--rtsp-transport", "udp", "--no-asr", "--watchdog", "2",
                  "--reconnect-budget", "4", "--out", str(out))
    cli.wait_position(3)
    rtsp_server.kill()
    stopped = time.time()
    code, err = cli.finish()
    assert code == 2, err
    assert time.time() - stopped < 40
    assert "stopped sending" in err and "Traceback" not in err
    result = json.loads(out.read_text())
    assert result["ingest"]["health"] == "failed" and result["duration_s"] >= 3


def test_sigint_stops_a_live_source_cleanly(rtsp_server, tmp_path):
    out = tmp_path / "live.json"
    cli = LiveCli(rtsp_server.url, "--rtsp-transport", "udp", "--no-asr", "--out", str(out))
    cli.wait_position(3)
    cli.proc.send_signal(signal.SIGINT)
    code, err = cli.finish()
    assert code == 0, err
    assert "stopping" in err and "Traceback" not in err
    result = json.loads(out.read_text())
    assert result["duration_s"] >= 3 and result["ingest"]["health"] == "ended"


def test_rtsp_over_tcp(rtsp_tcp_server, ray_runtime):
    options = live_options(duration=6.0)
    options.rtsp_transport = "tcp"
    pipe = Pipeline(rtsp_tcp_server, options)
    try:
        result = pipe.wait()
    finally:
        pipe.close()
    assert result["ingest"]["health"] == "ended" and result["ingest"]["segments_emitted"] >= 6
    read = result["ingest"]["frames_decoded"] + result["ingest"].get("frames_skipped", 0)  # unused B-frames: skipped
    assert result["has_audio"] and result["has_video"] and read > 100 and result["ingest"]["frames_decoded"] > 12
    assert any(e["label"] == "Speech" for e in result["events"])


def test_a_camera_that_answers_but_sends_nothing_is_an_outage_within_its_budget(rtsp_server):
    """The camera's encoder dies while its RTSP server still answers. Each connection that opened and then timed
    out counted as a reconnection (4 in this run), each recounted the outage from its start (60 s "lost" in a
    30-s run), and `--reconnect-budget` never applied: the stream ran on until its clock passed the duration.
    Now the outage is one interval from the last data, no reconnection is counted without data, and the budget
    ends the stream, failed, with the reason."""
    from pipelines.media.sources import parse_source

    policy = ReconnectPolicy(initial_s=0.3, max_s=1.0, outage_budget_s=6.0)
    reader = SegmentReader(parse_source(rtsp_server.url, "udp"), "cam", policy=policy, watchdog_s=2.0,
                           open_timeout_s=3.0, duration_s=40.0).start()
    segments = 0
    while reader.get(timeout=120) is not None:
        segments += 1
        if segments == 3:
            rtsp_server.silence()
    stats = reader.stats
    assert stats.health.value == "failed" and "did not come back within 6 s" in stats.failure, stats.to_dict()
    assert stats.reconnects == 0 and len(stats.lost_intervals) == 1, stats.to_dict()
    (start, end), = stats.lost_intervals
    assert abs(start - stats.analysed_until) < 1.0 and 6.0 <= end - start < 20.0, stats.to_dict()
