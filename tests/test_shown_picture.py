"""The picture the models see is the one a player shows. A phone held upright records its picture sideways and
sets the stream's display matrix so players turn it back; an anamorphic camera (a D1 stream's 704 x 576 at 12:11,
a DV's 720 x 480) stores pixels that are not square. The decoder turns and stretches the same way, so the models
see people upright and in proportion, and boxes land where a player shows them. A song's cover art is no
picture over time at all."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest


def _reencode(src: Path, dst: Path, seconds: float, rotation: int = 0, squeeze: Fraction | None = None) -> Path:
    """The first `seconds` of `src`'s picture, stored turned by -`rotation` degrees with a display matrix of
    `rotation` (counterclockwise, as PyAV reads it back), or stored `squeeze` times narrower with that sample
    aspect ratio, so a player shows it as `src` (neither: stored as it is)."""
    with av.open(str(src)) as inp, av.open(str(dst), "w") as out:
        video = inp.streams.video[0]
        stream = out.add_stream("libx264", rate=video.average_rate)
        stream.pix_fmt = "yuv420p"
        width, height = video.codec_context.width, video.codec_context.height
        stream.width, stream.height = (height, width) if rotation % 180 else (width, height)
        if rotation:
            stream.set_display_rotation(rotation)
        if squeeze:
            stream.width = round(width / squeeze / 2) * 2
            stream.codec_context.sample_aspect_ratio = squeeze
        for frame in inp.decode(video):
            if frame.time >= seconds:
                break
            if squeeze:
                frame = frame.reformat(width=stream.width, height=height)
            stored = np.ascontiguousarray(np.rot90(frame.to_ndarray(format="rgb24"), -rotation // 90))
            for packet in stream.encode(av.VideoFrame.from_ndarray(stored, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return dst


def _first_picture(path: Path) -> np.ndarray:
    from pipelines.media.decode import MediaDecoder, VideoSample

    with av.open(str(path)) as container:
        return next(s.rgb for s in MediaDecoder(container) if isinstance(s, VideoSample))


@pytest.mark.parametrize("rotation", [90, -90, 180])
def test_the_decoder_turns_a_rotated_picture_upright(demo_clip, tmp_path, rotation):
    plain = _first_picture(_reencode(demo_clip[0], tmp_path / "plain.mp4", 1.0))
    turned = _first_picture(_reencode(demo_clip[0], tmp_path / "turned.mp4", 1.0, rotation))
    assert turned.shape == plain.shape == (360, 640, 3) and turned.flags.c_contiguous
    assert np.abs(turned.astype(int) - plain).mean() < 3  # the same picture, up to the encoder's loss


def test_the_decoder_shows_non_square_pixels_in_proportion(demo_clip, tmp_path):
    plain = _first_picture(_reencode(demo_clip[0], tmp_path / "plain.mp4", 1.0))
    stored = _reencode(demo_clip[0], tmp_path / "anamorphic.mp4", 1.0, squeeze=Fraction(4, 3))  # 480 x 360 at 4:3
    with av.open(str(stored)) as container:
        assert container.streams.video[0].codec_context.width == 480
    shown = _first_picture(stored)
    assert shown.shape == plain.shape == (360, 640, 3)
    assert np.abs(shown.astype(int) - plain).mean() < 6  # the same picture, up to the squeeze's lost detail


def test_a_phone_clip_is_analysed_as_a_player_shows_it(demo_clip, tmp_path):
    """The astronaut and the camera man sideways: SSD missed a person and the face model every face (before the
    decoder turned them upright: persons 1 0 1 1, faces 0 0 0 0 in the first four seconds)."""
    from pipelines import AnalyzeOptions, StageConfig, analyze_inline

    def seen(path: Path) -> list[tuple]:
        result = analyze_inline(str(path), AnalyzeOptions(stages=StageConfig(asr=False, safety=False)))
        return [(s["persons"], s.get("faces")) for s in result["seconds"]]

    upright = seen(_reencode(demo_clip[0], tmp_path / "upright.mp4", 6.0))
    phone = seen(_reencode(demo_clip[0], tmp_path / "phone.mp4", 6.0, 90))
    assert upright[:2] == [(1, 1), (1, 1)], upright  # the scene: a person and a face in each of the first seconds
    assert phone == upright, (phone, upright)


def test_a_search_hits_thumbnail_is_the_shown_picture(demo_clip, tmp_path):
    import io

    from PIL import Image

    from ui.hits import frame_jpeg

    phone = _reencode(demo_clip[0], tmp_path / "phone.mp4", 1.0, 90)  # stored 360 x 640
    anamorphic = _reencode(demo_clip[0], tmp_path / "anamorphic.mp4", 1.0, squeeze=Fraction(4, 3))  # 480 x 360
    for path in (phone, anamorphic):
        thumb = Image.open(io.BytesIO(frame_jpeg(path, 0.5, width=320)))
        assert thumb.size == (320, 180), (path.name, thumb.size)  # shown 640 x 360


def test_an_audio_files_cover_art_is_not_a_picture_over_time(demo_clip, tmp_path):
    """A song or podcast with a cover: before, its one picture was analysed as second 0 of a video (a "person"
    and a "mouse" on the demo clip's first frame) and the clip called "audio+video"."""
    import shutil
    import subprocess

    from app.services.uploads import media_info
    from pipelines.media.decode import AudioChunk, MediaDecoder

    if shutil.which("ffmpeg") is None:
        pytest.fail("ffmpeg is required (scripts/bootstrap.sh installs it)")
    cover, song = tmp_path / "cover.jpg", tmp_path / "song.mp3"
    run = {"check": True, "capture_output": True}
    subprocess.run(["ffmpeg", "-y", "-i", str(demo_clip[0]), "-frames:v", "1", str(cover)], **run)
    subprocess.run(["ffmpeg", "-y", "-i", str(demo_clip[0]), "-i", str(cover), "-map", "0:a", "-map", "1:v",
                    "-c:a", "libmp3lame", "-c:v", "mjpeg", "-disposition:v", "attached_pic", "-t", "3", str(song)],
                   **run)
    with av.open(str(song)) as container:
        assert container.streams.video  # the cover is there, as a video stream of one frame
        decoder = MediaDecoder(container)
        info, items = decoder.info(), list(decoder)
    assert not info.has_video and info.has_audio
    assert items and all(isinstance(item, AudioChunk) for item in items)
    assert not media_info(song).has_video
