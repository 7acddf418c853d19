"""The inline runner runs each node on a thread of its own: seconds reach the sink in order and complete, a
stage that fails mid-stream ends the analysis with its error (no hang, no half result), and a stop request
keeps the seconds read so far."""

from __future__ import annotations

import threading

import pytest

from training.media.synth import flash_tone_clip


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    return flash_tone_clip(tmp_path_factory.mktemp("inline") / "flash.mp4", duration_s=8.0, event_s=(2.0, 4.0))


def test_nodes_run_on_their_own_threads_and_seconds_arrive_in_order(clip, monkeypatch):
    from pipelines import analyze_inline
    from pipelines.stages.visual import VisualStage

    seen: list[str] = []
    process = VisualStage.process

    def spying(self, seg):
        seen.append(threading.current_thread().name)
        return process(self, seg)

    monkeypatch.setattr(VisualStage, "process", spying)
    result = analyze_inline(str(clip))
    assert [s["t"] for s in result["seconds"]] == [float(i) for i in range(8)]
    assert set(seen) and all(name.startswith("stage-visual") for name in seen)  # not the caller's thread
    assert threading.current_thread().name not in seen


def test_a_stage_failing_mid_stream_ends_the_analysis_with_its_error(clip, monkeypatch):
    from pipelines import analyze_inline
    from pipelines.stages.audio import AudioStage

    process = AudioStage.process

    def failing(self, seg, speech):
        if seg.index == 3:
            raise RuntimeError("audio stage broke at second 3")
        return process(self, seg, speech)

    monkeypatch.setattr(AudioStage, "process", failing)
    before = {t.name for t in threading.enumerate()}
    with pytest.raises(RuntimeError, match="second 3"):
        analyze_inline(str(clip))
    left = {t.name for t in threading.enumerate()} - before
    assert not [name for name in left if name.startswith("stage-")], left  # every node's thread ended


def test_a_stop_request_keeps_the_seconds_read_so_far(tmp_path):
    from pipelines import analyze_inline
    from pipelines.spine.inline import IN_FLIGHT

    clip = flash_tone_clip(tmp_path / "long.mp4", duration_s=3.0 * IN_FLIGHT, event_s=(2.0, 4.0))

    stop = threading.Event()
    done: list[float] = []

    def progress(fraction: float) -> None:
        done.append(fraction)
        if len(done) == 2:
            stop.set()

    result = analyze_inline(str(clip), progress=progress, stop_event=stop)
    kept = len(result["seconds"])
    assert 2 <= kept <= 3 + IN_FLIGHT  # what was in the graph when the stop came still finishes
    assert [s["t"] for s in result["seconds"]] == [float(i) for i in range(kept)]
    assert result["ingest"]["analysed_until"] == float(kept)  # not how far the reader had read ahead
    assert result["ingest"]["warnings"] == [f"stopped on request after {kept:.1f} s"]
