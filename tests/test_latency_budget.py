"""The opt-in latency budget of the live spine: frame thinning, the ingest hook, and its wiring on both runners
(the IngestActor on Ray, the threads runner the CLI picks for one camera)."""

from __future__ import annotations

import dataclasses
import time
from concurrent.futures import Future

import numpy as np
import pytest

from models.cmdp.pipeline_model import ACTIONS, Action
from pipelines.media.ingest_stats import IngestStats
from pipelines.media.segment import Segment
from pipelines.spine.budget import LEVELS, BudgetHook, LatencyBudget, busy_second, level_of, thin_frames
from pipelines.stages.record import Second


def segment(index: int, fps: float = 4.0) -> Segment:
    times = [index + k / fps for k in range(int(fps))]
    return Segment("s", index, float(index), index + 1.0, frames=[np.zeros((4, 4, 3), np.uint8) for _ in times],
                   frame_times=times, audio=np.zeros(16000, np.float32), emitted_wall=0.0)


def test_thinning_keeps_the_coarser_time_grid_and_the_audio_tier_drops_frames():
    last, kept = None, []
    for i in range(4):
        seg, last = thin_frames(segment(i), "full", 0.5, last)
        kept.append(seg.frame_times)
    assert kept == [[0.0], [], [2.0], []]
    seg, _ = thin_frames(segment(0), "full", 2.0, None)
    assert seg.frame_times == [0.0, 0.5] and len(seg.frames) == 2
    seg, _ = thin_frames(segment(0), "speech+tags", 0.0, None)
    assert seg.frames == [] and seg.audio is not None and seg.audio.size == 16000
    # a lower rate from the next second on keeps that second's first frame (buckets compared at one rate)
    seg, last = thin_frames(segment(0), "full", 4.0, None)
    assert last == 0.75 and thin_frames(segment(1), "full", 1.0, last)[0].frame_times == [1.0]


def test_busy_second_reads_speech_or_people():
    assert busy_second(Second(speech_prob=0.9))
    assert busy_second(Second(speech_prob=0.1, visual={"persons": 2}))
    assert not busy_second(Second(speech_prob=0.1, visual={"persons": 0}, transcript=[]))


class Scripted:
    """A controller stand-in that records what the hook feeds it."""

    class learner:
        lam = 0.0

    def __init__(self):
        self.observed = []

    def decide(self, index, floor=0):
        assert floor == 0  # no drops in these tests
        return Action("full", 1.0) if index % 2 == 0 else Action("speech+tags", 0.0)

    def observe(self, index, latency_s, busy, load=None):
        self.observed.append((index, busy))


def test_hook_applies_decisions_and_feeds_back_latency_from_completion_callbacks():
    ctl = Scripted()
    stats = IngestStats()
    hook = BudgetHook(LatencyBudget(), sample_fps=4.0, controller=ctl, stats=stats)
    futures = []
    for i in range(3):
        seg = hook.apply(segment(i))
        assert len(seg.frames) == (1 if i % 2 == 0 else 0)
        f = Future()
        hook.track(seg, f)
        futures.append(f)
    futures[1].set_result(Second(index=1, speech_prob=0.8))
    futures[0].set_result(Second(index=0, speech_prob=0.0))
    futures[2].set_exception(RuntimeError("stage crashed"))  # not an observation
    summary = hook.summary()
    assert ctl.observed == [(0, False), (1, True)]
    assert summary["decisions"] == {"full@1": 2, "speech+tags@0": 1} and summary["observed"] == 2
    # the stream's health says it degraded, in the stated order's words: 1 fps of 4 is a lowered frame rate
    state = stats.to_dict()["degradation"]
    assert state["level"] == "frame_rate" and state["fps"] == 1.0
    assert state["seconds"] == {"full": 0, "frame_rate": 2, "speech+tags": 1} == summary["seconds_by_level"]


def test_dropped_seconds_degrade_in_the_stated_order_before_the_learner_reacts_and_calm_restores():
    """Under a sudden overload the reader drops seconds before the learner has observed any: each new drop
    lowers the mildest action allowed one step (frame rate, then the visual stage); calm seconds undo it."""
    from models.cmdp.controller import BudgetConfig, BudgetController
    from pipelines.spine.budget import RELAX_AFTER

    stats = IngestStats()
    ctl = BudgetController(BudgetConfig(latency_budget_s=1.0, max_fps=2.0))
    hook = BudgetHook(LatencyBudget(latency_s=1.0), sample_fps=2.0, controller=ctl, stats=stats)
    assert len(hook.apply(segment(0, fps=2.0)).frames) == 2  # nothing dropped: the fresh learner's full rate
    levels = []
    for i in range(1, 5):
        stats.segments_dropped += 3  # the reader dropped seconds since the last one was dispatched
        seg = hook.apply(segment(i, fps=2.0))
        levels.append((stats.to_dict()["degradation"]["level"], stats.degradation["fps"], len(seg.frames)))
    assert levels == [("frame_rate", 1.0, 1), ("frame_rate", 0.5, 1), ("speech+tags", 0.0, 0),
                      ("speech+tags", 0.0, 0)]
    assert stats.degradation["raised_by_drops"] == 3 and hook.summary()["raised_by_drops"] == 3
    assert ctl.pending[4][1] == 3  # the learner is told the action that was applied, not the one it proposed
    # Calm: seconds observed within budget and no new drop step the floor back down, one step at a time.
    for i in range(5, 5 + RELAX_AFTER):
        seg = hook.apply(dataclasses.replace(segment(i, fps=2.0), emitted_wall=time.time()))
        f = Future()
        hook.track(seg, f)
        f.set_result(Second(index=i))
    seg = hook.apply(segment(20, fps=2.0))
    assert hook.floor == 2
    stats.segments_dropped += 1  # a new drop raises it again at once
    hook.apply(segment(21, fps=2.0))
    assert hook.floor == 3


def test_levels_follow_the_stated_order():
    assert [level_of(a.tier, a.fps, 2.0) for a in ACTIONS] == ["full", "frame_rate", "frame_rate", "speech+tags"]
    assert LEVELS == ("full", "frame_rate", "speech+tags")
    assert IngestStats().to_dict().get("degradation") is None  # no budget, nothing to report


def test_default_hook_builds_the_cmdp_controller():
    hook = BudgetHook(LatencyBudget(latency_s=0.8, mode="relaxed"), sample_fps=1.0)
    assert hook.controller.config.mode == "relaxed" and max(a.fps for a in hook.controller.actions) == 1.0


@pytest.mark.slow
def test_ingest_actor_applies_the_budget_on_the_ray_spine(tmp_path, ray_runtime):
    import ray

    from pipelines.media.sources import parse_source
    from pipelines.spine.actors import IngestActor
    from pipelines.spine.graph import Node
    from pipelines.stages.record import Second
    from training.media.synth import ClipSpec, tone, write_clip

    @ray.remote(num_cpus=0)
    class Visual:
        def process(self, stream, seq, config, seg):
            return len(seg.frames)

    @ray.remote(num_cpus=0)
    class Parser:
        def process(self, stream, seq, config, record, frames):
            record.n_frames = frames  # what the visual stage was handed after the budget thinned it
            return record

        def finish(self, stream, seq, config):
            return Second.closing()

    @ray.remote(num_cpus=0)
    class Sink:
        def __init__(self):
            self.rows = []

        def write(self, record):
            self.rows.append(record)
            return record.index

        def seen(self):
            return self.rows

    nodes = [Node("visual", "-", "stages", ("segment",), "visual"),
             Node("parser", "-", "stages", ("record", "visual"), "record", finish=())]
    path = write_clip(tmp_path / "clip.mp4", ClipSpec(5.0, 10, 64, 48, lambda t: np.full((48, 64, 3), 90, np.uint8),
                                                      audio=tone(440, 5.0)))
    ingest = IngestActor.remote(parse_source(str(path)), "clip", 2.0, budget=LatencyBudget(latency_s=0.5))
    sink = Sink.remote()
    out = ray.get(ingest.run.remote(nodes, {"visual": Visual.remote(), "parser": Parser.remote()}, sink, "clip",
                                    {"visual": None, "parser": None}), timeout=120)
    rows = [r for r in ray.get(sink.seen.remote()) if r.index is not None]
    assert len(rows) == 5 and sum(out["budget"]["decisions"].values()) == 5
    assert all(r.n_frames <= 2 for r in rows) and out["budget"]["observed"] >= 1
    assert sum(out["stats"]["degradation"]["seconds"].values()) == 5  # reported with the stream's statistics
    assert ray.get(ingest.progress.remote())["stats"]["degradation"] == out["stats"]["degradation"]


@pytest.mark.slow
def test_the_cli_runs_one_camera_on_the_threads_runner_with_its_latency_budget(rtsp_server, tmp_path):
    """`foresight analyze URL` picks the threads runner (no Ray: the result has no Ray call timings), and the
    budget decides every second, reports its level with the stream's statistics and feeds on the seconds'
    latencies, as the IngestActor does on Ray; the seconds stream as `progress: N s, live` lines."""
    import json

    from tests.helpers.cli import run_cli

    out = tmp_path / "r.json"
    proc = run_cli("analyze", rtsp_server.url, "--rtsp-transport", "udp", "--duration", "6", "--latency-budget", "1",
                   "--no-asr", "--progress", "plain", "-q", "--out", str(out), timeout=240)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    assert "ray_call_s" not in result["timings"] and "ray_submit_s" not in result["timings"]["stages"]
    emitted = result["ingest"]["segments_emitted"]
    assert emitted >= 5 and sum(result["budget"]["decisions"].values()) == emitted
    assert sum(result["ingest"]["degradation"]["seconds"].values()) == emitted
    assert result["budget"]["observed"] >= emitted - 1  # each second's latency reached the controller
    assert "progress: 1 s, live" in proc.stderr or "progress: 2 s, live" in proc.stderr, proc.stderr


def test_the_cli_runs_inline_unless_a_cluster_is_named(monkeypatch):
    from app.cli import choose_runner

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert choose_runner("auto") == "inline" and choose_runner("ray") == "ray"
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:6379")
    assert choose_runner("auto") == "ray" and choose_runner("inline") == "inline"
