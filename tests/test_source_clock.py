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


def _join(src: Path, folder: Path, starts: tuple[float, ...], seconds: float,
          clocks: tuple[float, ...] | None = None) -> Path:
    """`seconds` of `src` from each of `starts` as TS files, each with its clock from 0 (or `clocks`), joined byte
    for byte."""
    joined = folder / "joined.ts"
    joined.write_bytes(b"".join(p.read_bytes() for p in ts_parts(src, folder, starts, seconds, clocks)))
    return joined


@pytest.fixture(scope="module")
def joined_ts(demo_clip, tmp_path_factory) -> Path:
    """The demo clip's 0-8 s and 10-18 s, joined."""
    return _join(demo_clip[0], tmp_path_factory.mktemp("joined"), (0, 10), 8)


@pytest.fixture(scope="module")
def leapt_ts(demo_clip, tmp_path_factory) -> Path:
    """The demo clip's 0-8 s, then its 10-18 s from an encoder whose clock stands 1,000 s on."""
    return _join(demo_clip[0], tmp_path_factory.mktemp("leapt"), (0, 10), 8, clocks=(0, 1000))


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


def test_a_clock_that_leaps_ahead_is_continued_in_a_file(leapt_ts, demo_clip):
    """Before, the 1,000 s between the parts came back as 1,000 empty seconds (1,009 in all), and a duration
    limit cut the second part off; FFmpeg continues such a clock too."""
    from app.services.uploads import capped
    from pipelines import AnalyzeOptions, StageConfig, analyze_inline

    options = capped(AnalyzeOptions(stages=StageConfig(asr=False, safety=False)), 60.0)
    result = analyze_inline(str(leapt_ts), options)
    assert 16 <= len(result["seconds"]) <= 17 and result["ingest"]["clock_jumps"] == 2, len(result["seconds"])
    assert result["ingest"]["warnings"] == []
    ring = demo_clip[1].phone[0] - 10 + 8
    assert any(e["label"] == "Telephone_bell_ringing" and abs(e["start"] - ring) < 1.5 for e in result["events"]), \
        result["events"]


def test_a_live_feed_that_stalled_keeps_the_time_that_passed(leapt_ts):
    """On a live source a leap the wall clock covers is time that passed (a feed back after a stall); one it does
    not cover is a new clock. The packets are the leapt file's; only the wall clock is played."""
    from pipelines.media.decode import ContinuousClock

    def leaps(live: bool, wall) -> int:
        with av.open(str(leapt_ts)) as container:
            clock = ContinuousClock(container, live=live)
            for packet in container.demux():
                clock.wall = lambda p=packet: wall(p)
                clock.mend(packet)
        return clock.jumps

    def in_step(p) -> float:  # each packet arrives when its own time comes round: a 1,000-s stall
        return float(p.dts * p.time_base) if p.dts is not None else 0.0

    assert leaps(True, in_step) == 0
    assert leaps(True, lambda p: 0.0) == 2  # arrived at once: the encoder's new clock
    assert leaps(False, in_step) == 2  # a file has no wall clock to cover a leap


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


def test_no_second_past_the_duration_limit(demo_clip, tmp_path):
    """A file's clock that leaps past the limit (here an MKV whose packets from 8 s on stand 5,000 s later; the
    limit's reason is a file whose header hides its length) stops the analysis at the limit. Before, the leap was
    pushed first, and the 5,000 empty seconds up to it came out past the limit."""
    from pipelines.media.ingest import SegmentReader
    from pipelines.media.sources import parse_source

    gap = tmp_path / "gap.mkv"
    with av.open(str(demo_clip[0])) as src, av.open(str(gap), "w") as out:
        streams = {s.index: out.add_stream_from_template(s) for s in (src.streams.video[0], src.streams.audio[0])}
        for packet in src.demux():
            if packet.dts is None:
                continue
            if packet.pts * packet.time_base >= 8:
                packet.pts, packet.dts = (v + int(5000 / packet.time_base) for v in (packet.pts, packet.dts))
            packet.stream = streams[packet.stream.index]
            out.mux(packet)
    reader = SegmentReader(parse_source(str(gap)), "gap", duration_s=20.0).start()
    segs = []
    while (seg := reader.get(timeout=60)) is not None:
        segs.append(seg)
    assert max(s.end for s in segs) == 20.0 and len(segs) == 20, (len(segs), max(s.end for s in segs))
    assert any("analysed the first 20 s only" in w for w in reader.stats.warnings)
