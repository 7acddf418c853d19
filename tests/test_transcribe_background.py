"""Live seconds do not wait for Whisper: with `asr_background` (what `graph.node_config` sets for a live source) the
transcribe stage hands a second on at once and its lines join a later second, the same lines in the same order
as transcribing in line; `finish` waits for the rest. Real Whisper (tiny.en) on espeak-ng speech."""

from __future__ import annotations

import threading
import time

import pytest

from models.audio.asr import make_recognizer
from pipelines.stages.config import StageConfig
from pipelines.stages.speech import TranscribeStage


class HeldWhisper:
    """The real recognizer, held back until `go` is set: a transcription that takes as long as the test says."""

    def __init__(self, recognizer):
        self.recognizer, self.go, self.calls = recognizer, threading.Event(), 0

    def transcribe(self, audio, offset):
        assert self.go.wait(60), "never released"
        self.calls += 1
        return self.recognizer.transcribe(audio, offset)


@pytest.fixture(scope="module")
def whisper():
    return make_recognizer("tiny.en")


@pytest.fixture(scope="module")
def pieces():
    from training.media.synth import speak

    return [{"audio": speak("The phone is ringing in the kitchen."), "offset": 3.0},
            {"audio": speak("Please check the front door before you leave."), "offset": 9.0}]


def second(index: int, pieces: list[dict]) -> dict:
    return {"index": index, "speech_prob": 0.9, "spans": [], "vad": True, "open_since": None, "pieces": pieces}


def test_a_live_second_does_not_wait_for_whisper_and_the_lines_come_later_in_order(whisper, pieces):
    inline = TranscribeStage(StageConfig(), recognizer=whisper)
    expected = inline.process(second(8, pieces))["transcript"]
    assert [line["start"] for line in expected] == sorted(line["start"] for line in expected) and len(expected) >= 2

    held = HeldWhisper(whisper)
    stage = TranscribeStage(StageConfig(asr_background=True), recognizer=held)
    t0 = time.perf_counter()
    out = stage.process(second(8, pieces))
    assert out["transcript"] == [] and held.calls == 0  # handed on while Whisper has not even started
    assert out["index"] == 8 and out["speech_prob"] == 0.9
    assert stage.process(second(9, []))["transcript"] == []
    assert time.perf_counter() - t0 < 1.0
    held.go.set()
    later: list[dict] = []
    deadline = time.time() + 60
    index = 10
    while len(later) < len(expected) and time.time() < deadline:
        later += stage.process(second(index, []))["transcript"]
        index += 1
        time.sleep(0.05)
    assert later == expected  # the same lines, in order, each once
    assert stage.finish(second(index, []))["transcript"] == []
    assert stage.timings()["asr_s"] > 0


def test_finish_waits_for_every_line_still_in_whisper(whisper, pieces):
    held = HeldWhisper(whisper)
    stage = TranscribeStage(StageConfig(asr_background=True), recognizer=held)
    assert stage.process(second(8, pieces[:1]))["transcript"] == []
    threading.Timer(0.5, held.go.set).start()
    final = stage.finish(second(12, pieces[1:]))  # the last span's piece comes with the end of the stream
    inline = TranscribeStage(StageConfig(), recognizer=whisper)
    assert final["transcript"] == inline.process(second(8, pieces))["transcript"]


def test_a_new_source_drops_the_last_ones_lines(whisper, pieces):
    held = HeldWhisper(whisper)
    stage = TranscribeStage(StageConfig(asr_background=True), recognizer=held)
    stage.process(second(8, pieces[:1]))
    stage.reset()
    held.go.set()
    assert stage.finish(second(1, []))["transcript"] == []


def test_only_a_live_source_transcribes_in_the_background():
    from pipelines import AnalyzeOptions
    from pipelines.spine import graph

    options = AnalyzeOptions()
    transcribe = next(n for n in graph.nodes(options) if n.name == "transcribe")
    visual = next(n for n in graph.nodes(options) if n.name == "visual")
    assert graph.node_config(transcribe, options, live=True).asr_background
    assert not graph.node_config(transcribe, options).asr_background
    assert not graph.node_config(visual, options, live=True).asr_background
    assert not options.stages.asr_background  # the options themselves are left as they were


def test_the_threads_runner_builds_a_live_sources_transcribe_stage_for_the_background_and_a_files_not():
    """`--runner inline` on a camera transcribes behind the seconds as the Ray runner does; its stage cache does not
    hand a file the live source's stage, or the other way round."""
    from pipelines import AnalyzeOptions
    from pipelines.spine import graph
    from pipelines.spine.inline import StageCache

    options = AnalyzeOptions()
    transcribe = next(n for n in graph.nodes(options) if n.name == "transcribe")
    cache = StageCache()
    live = cache.get(transcribe, options, live=True)
    assert live.config.asr_background and cache.get(transcribe, options, live=True) is live
    file = cache.get(transcribe, options)
    assert file is not live and not file.config.asr_background


def thread_cpu_and_nice() -> dict[int, tuple[float, int]]:
    """This process's threads: id -> (CPU seconds, niceness)."""
    import os

    import psutil

    out = {}
    for thread in psutil.Process().threads():
        try:
            out[thread.id] = (thread.user_time + thread.system_time, os.getpriority(os.PRIO_PROCESS, thread.id))
        except OSError:  # it ended meanwhile
            continue
    return out


@pytest.mark.skipif(not __import__("sys").platform.startswith("linux"), reason="per-thread priority is Linux's")
def test_background_whisper_runs_at_low_priority_and_gives_the_same_lines(pieces):
    """Whisper behind a live stream's seconds takes its CPU at a lower priority (its thread and CTranslate2's
    worker, which the model starts as it loads): four cameras' utterances ending together no longer hold every
    stream's seconds back (docs/performance.md, session 30). The lines are those of transcribing in line."""
    import os

    from pipelines.stages.speech import BACKGROUND_NICE

    mine = os.getpriority(os.PRIO_PROCESS, 0)
    stage = TranscribeStage(StageConfig(asr_background=True))  # the real shared Whisper, built on its thread
    before = thread_cpu_and_nice()
    assert stage.process(second(8, pieces))["transcript"] == []
    lines = stage.finish(second(12, []))["transcript"]
    after = thread_cpu_and_nice()
    spent = {tid: cpu - before.get(tid, (0.0, 0))[0] for tid, (cpu, _) in after.items()}
    low = sum(s for tid, s in spent.items() if after[tid][1] >= min(19, mine + BACKGROUND_NICE))
    assert sum(spent.values()) > 0.2 and low >= 0.8 * sum(spent.values()), (spent, after)
    assert lines == TranscribeStage(StageConfig()).process(second(8, pieces))["transcript"] and len(lines) >= 2


@pytest.mark.parametrize("value", ["ten", "-1", "20"])
def test_a_bad_whisper_niceness_is_refused_with_the_reason(monkeypatch, value):
    from models.errors import BadInput
    from pipelines.stages.speech import NICE_ENV

    monkeypatch.setenv(NICE_ENV, value)
    with pytest.raises(BadInput, match="FORESIGHT_WHISPER_NICE must be a whole number from 0 to 19"):
        TranscribeStage(StageConfig(asr_background=True))
