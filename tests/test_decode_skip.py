"""Decoding only what is used: frames the sampler cannot take are decoded only if they are reference frames,
and the sampled frames (so motion, the motion gate and every model's input) and the results are those of
decoding every frame. Real PyAV decoding of the demo clip and of a still scene a person crosses."""

from __future__ import annotations

import hashlib
from pathlib import Path

import av
import pytest

from pipelines.media.decode import DECODE_ALL_ENV, MediaDecoder, VideoSample
from pipelines.sinks.results import stable_view
from tests.helpers.cli import ROOT
from training.perception.static_scene import write_static_scene

DEMO = ROOT / "data" / "demo.mp4"


@pytest.fixture(scope="module")
def still_scene(tmp_path_factory) -> Path:
    return write_static_scene(tmp_path_factory.mktemp("still") / "still.mp4", 12, walk_every_s=100, width=640,
                              height=360, fps=30, first_walk_s=5)


def samples(path: Path, skip: bool, fps: float, threads: int) -> tuple[list, int, int]:
    with av.open(str(path)) as container:
        decoder = MediaDecoder(container, fps, 640, decode_threads=threads, skip_unsampled=skip)
        out = [(it.time, hashlib.sha1(it.rgb.tobytes()).hexdigest()) for it in decoder if isinstance(it, VideoSample)]
    return out, decoder.frames_decoded, decoder.frames_skipped


@pytest.mark.parametrize("clip", ["demo", "still"])
def test_the_sampled_frames_are_those_of_decoding_every_frame(clip, still_scene):
    path = DEMO if clip == "demo" else still_scene
    with av.open(str(path)) as container:
        total = sum(1 for p in container.demux(video=0) if p.size)
    for fps in (2.0, 1.0, 5.0):
        for threads in (0, 1):  # FFmpeg's frame threads (the default) and one thread
            every, decoded_all, skipped_all = samples(path, False, fps, threads)
            used, decoded, skipped = samples(path, True, fps, threads)
            assert used == every and len(every) >= fps * 10, (fps, threads)
            assert (decoded_all, skipped_all) == (total, 0)
            assert decoded + skipped == total and skipped > 0.25 * total, (fps, threads, decoded, skipped)


@pytest.mark.slow
@pytest.mark.parametrize("clip", ["demo", "still"])
def test_an_analysis_gives_the_same_result_with_or_without_skipping(clip, still_scene, monkeypatch):
    from pipelines import AnalyzeOptions, analyze_inline

    path = str(DEMO if clip == "demo" else still_scene)
    monkeypatch.setenv(DECODE_ALL_ENV, "1")
    every = analyze_inline(path, AnalyzeOptions())
    monkeypatch.delenv(DECODE_ALL_ENV)
    used = analyze_inline(path, AnalyzeOptions())
    assert stable_view(used) == stable_view(every)  # timings and ingest counters aside
    read = every["ingest"]["frames_decoded"]
    assert used["ingest"]["frames_decoded"] + used["ingest"]["frames_skipped"] == read
    assert used["ingest"]["frames_skipped"] > 0.25 * read, used["ingest"]
