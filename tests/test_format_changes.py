"""A source whose sound or picture changes format mid-stream: a TS or HLS feed across a programme or an advert,
DVR recordings joined end to end. Before, the first audio frame of another sample rate or layout ended the
analysis with "internal error: Frame does not match AudioResampler setup" (exit 1, no result)."""

from __future__ import annotations

import itertools
from pathlib import Path

import av
import pytest

from tests.helpers.ts_parts import ts_parts


@pytest.fixture(scope="module")
def changing_ts(demo_clip, tmp_path_factory) -> Path:
    """The demo's 0-6 s at 640x360 with 48 kHz stereo sound, then its 8-14 s at 320x240 with 44.1 kHz mono."""
    folder = tmp_path_factory.mktemp("changing")
    parts = ts_parts(demo_clip[0], folder, (0, 8), 6, clocks=(0, 6.1),
                     formats=(("-ar", "48000", "-ac", "2"), ("-vf", "scale=320:240", "-ar", "44100", "-ac", "1")))
    joined = folder / "joined.ts"
    joined.write_bytes(b"".join(p.read_bytes() for p in parts))
    return joined


def test_the_decoder_follows_a_change_of_sound_and_picture(changing_ts):
    from pipelines.media.decode import AudioChunk, MediaDecoder, VideoSample

    with av.open(str(changing_ts)) as container:
        items = list(MediaDecoder(container))
    chunks = [i for i in items if isinstance(i, AudioChunk)]
    ends = [(c.time, c.time + c.samples.size / 16000) for c in chunks]
    assert ends[-1][1] > 11.5  # the sound goes on through the second part
    assert all(abs(b[0] - a[1]) < 0.1 for a, b in itertools.pairwise(ends)), ends  # with no gap or overlap
    sizes = [i.rgb.shape[:2] for i in items if isinstance(i, VideoSample)]
    assert sizes[0] == (360, 640) and sizes[-1] == (240, 320)


def test_a_change_of_sound_is_analysed_whole(changing_ts, demo_clip):
    from pipelines import AnalyzeOptions, StageConfig, analyze_inline

    result = analyze_inline(str(changing_ts), AnalyzeOptions(stages=StageConfig(asr=False, safety=False)))
    assert len(result["seconds"]) == 12 and result["ingest"]["warnings"] == [], result["ingest"]
    ring = demo_clip[1].phone[0] - 8 + 6.1  # the phone rings in the second part
    assert any(e["label"] == "Telephone_bell_ringing" and abs(e["start"] - ring) < 1.5 for e in result["events"]), \
        result["events"]
