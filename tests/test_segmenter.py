"""Segmenter and decoder on real encoded media: alignment, odd rates, VFR, missing streams."""

from __future__ import annotations

from fractions import Fraction

import av
import numpy as np
import pytest

from pipelines.media.ingest import SegmentReader
from pipelines.media.sources import parse_source
from training.media.synth import ClipSpec, flash_tone_clip, tone, write_clip


def read_all(path) -> tuple[list, SegmentReader]:
    reader = SegmentReader(parse_source(str(path)), "t").start()
    segs = []
    while (seg := reader.get(timeout=30)) is not None:
        segs.append(seg)
    return segs, reader


def tone_onset(audio: np.ndarray, rate: int = 16000) -> float | None:
    loud = np.flatnonzero(np.abs(audio) > 0.1)
    return None if loud.size == 0 else loud[0] / rate


def test_flash_and_tone_land_in_the_same_second_at_the_right_offset(tmp_path):
    path = flash_tone_clip(tmp_path / "ft.mp4", duration_s=6.0, event_s=(2.0, 4.5), audio_rate=44_100)
    segs, reader = read_all(path)
    assert [s.index for s in segs] == list(range(6))
    bright = [s.index for s in segs if any(f.mean() > 128 for f in s.frames)]
    beeps = {s.index: tone_onset(s.audio) for s in segs if tone_onset(s.audio) is not None}
    assert bright == [2, 4]
    assert sorted(beeps) == [2, 4]
    assert beeps[2] == pytest.approx(0.0, abs=0.03)  # the beep starts at 2.0 s
    assert beeps[4] == pytest.approx(0.5, abs=0.03)  # and at 4.5 s
    assert all(s.audio.size == 16000 and s.audio.dtype == np.float32 for s in segs)
    assert all(len(s.frames) == 2 for s in segs)  # 2 fps sampling
    assert reader.info.audio_rate == 44_100


def test_video_without_audio_yields_segments_without_audio(tmp_path):
    path = write_clip(tmp_path / "silent.mp4",
                      ClipSpec(3.0, 25, 160, 120, lambda t: np.full((120, 160, 3), int(t * 50), np.uint8)))
    segs, reader = read_all(path)
    assert len(segs) == 3 and all(s.audio is None for s in segs)
    assert reader.info.has_audio is False and reader.info.has_video is True


def test_audio_only_file_at_odd_rate(tmp_path):
    path = write_clip(tmp_path / "beep.wav", ClipSpec(3.0, audio=tone(440, 3.0, 22_050), audio_rate=22_050,
                                                      audio_codec="pcm_s16le"))
    segs, reader = read_all(path)
    assert [s.index for s in segs] == [0, 1, 2]
    assert all(not s.frames for s in segs)
    assert all(s.audio.size == 16000 and np.abs(s.audio).max() > 0.4 for s in segs)
    assert reader.info.has_video is False


def test_variable_frame_rate_is_sampled_on_the_time_grid(tmp_path):
    path = tmp_path / "vfr.mkv"
    times_ms = [0, 40, 80, 400, 450, 1000, 1010, 1600, 2300, 2600]  # irregular gaps
    with av.open(str(path), "w") as out:
        st = out.add_stream("mpeg4", rate=25)
        st.width, st.height, st.pix_fmt = 64, 48, "yuv420p"
        st.codec_context.time_base = Fraction(1, 1000)
        for i, ms in enumerate(times_ms):
            frame = av.VideoFrame.from_ndarray(np.full((48, 64, 3), i * 20, np.uint8), format="rgb24")
            frame.pts, frame.time_base = ms, Fraction(1, 1000)
            for pkt in st.encode(frame):
                out.mux(pkt)
        for pkt in st.encode(None):
            out.mux(pkt)
    segs, _ = read_all(path)
    got = [[round(t, 2) for t in s.frame_times] for s in segs]
    # The first frame at or after each 0.5 s grid point; a half second without frames gives none,
    # and a burst of frames inside one half second gives one.
    assert got == [[0.0], [1.0, 1.6], [2.3, 2.6]]


def test_without_a_picture_consumer_video_is_demuxed_not_decoded(tmp_path):
    """`decode_video=False` (no stage reads pictures, e.g. --no-visual): no video frame is decoded, yet the
    seconds, their audio and the sampling instants (what live drops count) are those of a decoding read."""
    path = flash_tone_clip(tmp_path / "ft.mp4", duration_s=4.0, event_s=(1.0, 2.5))
    decoded, full = read_all(path)
    reader = SegmentReader(parse_source(str(path)), "t", decode_video=False).start()
    skipped = []
    while (seg := reader.get(timeout=30)) is not None:
        skipped.append(seg)
    assert [(s.index, s.start, s.end) for s in skipped] == [(s.index, s.start, s.end) for s in decoded]
    assert all(np.array_equal(a.audio, b.audio) for a, b in zip(skipped, decoded, strict=True))
    assert all(not s.frames and s.frames_not_decoded == len(d.frames) == 2 for s, d in zip(skipped, decoded,
                                                                                          strict=True))
    # A decoding read decodes the sampled and the reference frames and skips the rest (pipelines/media/decode.py).
    assert full.stats.frames_decoded + full.stats.to_dict().get("frames_skipped", 0) == 120
    assert reader.stats.frames_decoded == 0 and reader.stats.to_dict()["frames_skipped"] == 120
    assert reader.info.has_video and reader.stats.health.value == "ended"


def test_frames_decoded_counts_the_frames_after_the_last_sampled_one(tmp_path):
    """Video that outlasts the audio ends on frames no sampling instant keeps; they were read (decoded, or skipped
    as unsampled non-reference frames), so they count."""
    path = write_clip(tmp_path / "long_video.mp4", ClipSpec(
        duration_s=3.0, fps=25.0, width=64, height=48, frame_fn=lambda t: np.full((48, 64, 3), 90, np.uint8),
        audio=tone(440.0, 2.0)))
    with av.open(str(path)) as container:
        frames = sum(1 for p in container.demux(video=0) if p.size)
    segments, reader = read_all(path)
    assert frames == 75 and reader.stats.frames_decoded + reader.stats.frames_skipped == frames and len(segments) == 3


def test_a_sound_track_that_stops_does_not_hold_the_picture_back(tmp_path):
    """A camera that declares a sound track and stops sending it, or a file whose sound ends long before its
    picture: the seconds go on without the sound, a few seconds behind the picture. Before, each was held until
    the sound came back: a live stream gave nothing, and this file gave its 20 seconds only at its end, with
    every frame kept in memory until then."""
    from pipelines.media.decode import MediaDecoder, VideoSample
    from pipelines.media.segmenter import Segmenter

    beep = tone(440, 0.3)
    path = write_clip(tmp_path / "short_sound.mp4", ClipSpec(20.0, 10, 160, 120,
                                                            lambda t: np.full((120, 160, 3), 90, np.uint8), beep))
    lag = []  # how far the picture had come when each second came out
    with av.open(str(path)) as container:
        decoder = MediaDecoder(container)
        seg = Segmenter("t", decoder.video is not None, decoder.audio is not None)
        assert seg.has_audio
        seen = 0.0
        for item in decoder:
            seen = max(seen, item.time) if isinstance(item, VideoSample) else seen
            lag += [seen - s.end for s in seg.push(item)]
        held = list(seg.flush(final=True))
    assert len(lag) + len(held) == 20 and len(held) <= 1, (len(lag), len(held))
    assert max(lag) <= Segmenter.STALL_S, lag  # the first seconds wait for the sound that long
    assert max(lag[5:]) <= 0.5, lag  # then each second comes out with the picture, not in bursts of `STALL_S`


def test_sound_that_starts_late_is_kept_whole(tmp_path):
    """A sound track that starts 3 s after the picture (less than `STALL_S`) is waited for: none of it is lost."""
    import subprocess

    clip = write_clip(tmp_path / "clip.mp4", ClipSpec(8.0, 10, 160, 120,
                                                      lambda t: np.full((120, 160, 3), 90, np.uint8), tone(440, 8.0)))
    late = tmp_path / "late.mp4"
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", str(clip), "-itsoffset", "3", "-i", str(clip),
                    "-map", "0:v", "-map", "1:a", "-c", "copy", str(late)], check=True, capture_output=True)
    segs, _ = read_all(late)
    loud = [float(np.abs(s.audio).max()) for s in segs]
    assert len(segs) >= 10 and all(v < 0.1 for v in loud[:3]) and all(v > 0.1 for v in loud[3:10]), loud
