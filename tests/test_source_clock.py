"""A source whose clock starts again mid-stream: two MPEG-TS recordings joined end to end (as a DVR's files, an
HLS stream across a discontinuity, or an encoder restarted behind a TS feed). Players carry on past the join;
so does the decoder (`ContinuousClock`). Before, the second part's frames came back with times already passed,
the sampler skipped every one of them and the second part was lost (8 of the 16 seconds analysed)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import av
import pytest

from tests.helpers.ts_parts import ts_parts


def _join(src: Path, folder: Path, starts: tuple[float, ...], seconds: float) -> Path:
    """`seconds` of `src` from each of `starts` as TS files, each with its clock from 0, joined byte for byte."""
    joined = folder / "joined.ts"
    joined.write_bytes(b"".join(p.read_bytes() for p in ts_parts(src, folder, starts, seconds)))
    return joined


@pytest.fixture(scope="module")
def joined_ts(demo_clip, tmp_path_factory) -> Path:
    """The demo clip's 0-8 s and 10-18 s, joined."""
    return _join(demo_clip[0], tmp_path_factory.mktemp("joined"), (0, 10), 8)


@pytest.fixture(scope="module")
def longer_than_declared(demo_clip, tmp_path_factory) -> Path:
    """Two 3-s parts joined: the header declares about 3 s, the file holds 6."""
    return _join(demo_clip[0], tmp_path_factory.mktemp("joined_short"), (0, 10), 3)


def test_the_decoder_continues_a_clock_that_starts_again(joined_ts):
    from pipelines.media.decode import AudioChunk, MediaDecoder, VideoSample

    with av.open(str(joined_ts)) as container:
        decoder = MediaDecoder(container)
        items = list(decoder)
    video = [i.time for i in items if isinstance(i, VideoSample)]
    audio = [i.time for i in items if isinstance(i, AudioChunk)]
    assert decoder.clock.jumps == 2  # the video's clock and the audio's
    assert video == sorted(video) and video[-1] > 15.5 and len(video) >= 31  # 2 a second over both parts
    assert audio == sorted(audio) and audio[-1] > 15.5
    assert all(b - a < 0.6 for a, b in itertools.pairwise(video))  # no gap at the join


def test_a_joined_recording_is_analysed_whole(joined_ts, demo_clip):
    from pipelines import AnalyzeOptions, StageConfig, analyze_inline

    truth = demo_clip[1]
    result = analyze_inline(str(joined_ts), AnalyzeOptions(stages=StageConfig(asr=False, safety=False)))
    assert len(result["seconds"]) >= 16 and result["ingest"]["clock_jumps"] == 2
    ring = truth.phone[0] - 10 + 8  # the phone rings in the second part, which follows the first's 8 s
    assert any(e["label"] == "Telephone_bell_ringing" and abs(e["start"] - ring) < 1.5 for e in result["events"]), \
        result["events"]


def test_a_file_whose_clock_never_jumps_is_untouched(demo_clip):
    from pipelines.media.decode import MediaDecoder

    with av.open(str(demo_clip[0])) as container:
        decoder = MediaDecoder(container)
        assert not decoder.clock.enabled  # MP4: a clock that cannot start again, passed as it is
        list(decoder)
    assert decoder.clock.jumps == 0


def _cut_at_the_limit(result: dict) -> None:
    assert len(result["seconds"]) <= 4, len(result["seconds"])  # not the 6 s the file holds
    assert any("analysed the first 3.5 s only" in w for w in result["ingest"]["warnings"]), result["ingest"]


def test_the_cli_stops_a_file_at_the_duration_limit_its_header_hid(longer_than_declared, tmp_path):
    """`--max-duration` (as `serve`'s) refuses a file whose header declares more; one whose header declares less
    than it holds, or nothing (a browser's WebM), is analysed up to the limit and no further, and says so."""
    from tests.helpers.cli import run_cli

    out = tmp_path / "r.json"
    proc = run_cli("analyze", str(longer_than_declared), "--max-duration", "3.5", "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    _cut_at_the_limit(json.loads(out.read_text()))


def test_the_dashboard_stops_a_file_at_the_duration_limit(longer_than_declared, tmp_path):
    from pipelines import AnalyzeOptions, StageConfig
    from pipelines.sinks.store import Store
    from ui.backend import analyze_file

    store = Store(tmp_path / "f.db")
    _, result = analyze_file(store, longer_than_declared, AnalyzeOptions(stages=StageConfig(asr=False, safety=False)),
                             max_duration_s=3.5)
    _cut_at_the_limit(result)


def test_a_file_within_the_limit_has_no_warning(demo_clip):
    from app.services.uploads import capped
    from pipelines import AnalyzeOptions, StageConfig, analyze_inline

    options = capped(AnalyzeOptions(stages=StageConfig(asr=False, safety=False)), 20.0)  # the demo: exactly 20 s
    result = analyze_inline(str(demo_clip[0]), options)
    assert len(result["seconds"]) == 20 and result["ingest"]["warnings"] == []
