"""A still camera: one real background photo, and a real-photo person cut-out walking across it now and then.

Most cameras show nothing moving most of the day; this is the scene the motion gate is measured on
(`benchmarks/multistream.py --scene static`, `tests/test_motion_gate.py`). The person (a Tux Paint photo stamp,
the tracking set's cut-outs) enters from the left every `walk_every_s` seconds and takes `cross_s` seconds to
cross; the rest of the time every frame is the same photo.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from training.perception.detset import paste
from training.perception.detset_sources import available, load_background, load_cutout


def scene_sources() -> tuple[str, str]:
    """(background photo, person cut-out) files: the first installed of each in the detection set's inventory."""
    files = available()
    background = next(s.locator for s in files if s.coco_class is None)
    person = next(s.locator for s in files if s.coco_class == "person")
    return background, person


def scene_frames(width: int, height: int, walk_every_s: float, cross_s: float = 5.0):
    """`frame(t) -> RGB uint8` of the scene, and the walker's on-screen intervals' rule `walking(t) -> bool`."""
    import cv2

    background, person = scene_sources()
    bg = cv2.resize(load_background(background), (width, height), interpolation=cv2.INTER_AREA)
    cut = load_cutout(person)
    scale = 0.6 * height / cut.shape[0]
    span = width + cut.shape[1] * scale

    def walking(t: float) -> bool:
        return t % walk_every_s < cross_s

    def frame(t: float) -> np.ndarray:
        canvas = bg.copy()
        if walking(t):
            x = int(round(-cut.shape[1] * scale + span * (t % walk_every_s) / cross_s))
            paste(canvas, cut, x, int(height * 0.95 - cut.shape[0] * scale), scale)
        return canvas

    return frame, walking


def write_static_scene(path: str | Path, duration_s: float, walk_every_s: float = 60.0, width: int = 1280,
                       height: int = 720, fps: float = 30.0, first_walk_s: float = 0.0) -> Path:
    """Encode the scene (H.264, a keyframe a second) with the walker's first entry at `first_walk_s`."""
    from training.media.synth import ClipSpec, write_clip

    frame, _ = scene_frames(width, height, walk_every_s)
    return write_clip(path, ClipSpec(duration_s, fps, width, height,
                                     lambda t: frame(t - first_walk_s + walk_every_s), crf=23))
