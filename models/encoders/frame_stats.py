"""Cheap picture statistics on small grey copies of the sampled frames: motion, the share of the picture that
moved, scene cuts and camera trouble (dark, blurred, covered, frozen). They cost about a millisecond a frame,
so they run on every frame and decide whether the costly models need to (`MotionGate`)."""

from __future__ import annotations

import math

import numpy as np

from models.encoders.visual_config import VisualConfig

TROUBLES = ("dark", "blurred", "covered", "frozen")
COLOR_BINS = 8
THUMB = 4
MOVED_LEVEL = 25.0  # grey levels (0-255) a small-copy pixel must change by to count as moved, above sensor noise


class FrameStats:
    """Motion energy, scene cuts and camera trouble from small grey copies of the sampled frames."""

    def __init__(self, config: VisualConfig):
        self.config = config
        self.reset()

    def reset(self) -> None:
        self._prev_grey: np.ndarray | None = None
        self._prev_hist: np.ndarray | None = None
        self._frozen_s = 0.0
        self._prev_t: float | None = None

    def _small(self, rgb: np.ndarray) -> np.ndarray:
        import cv2

        h, w = rgb.shape[:2]
        side = self.config.thumb_side
        small = cv2.resize(rgb, (side, max(2, int(round(h * side / w)))), interpolation=cv2.INTER_AREA)
        return small

    @staticmethod
    def _hist(small: np.ndarray) -> np.ndarray:
        bins = (small // (256 // COLOR_BINS)).reshape(-1, 3)
        hist = np.concatenate([np.bincount(bins[:, c], minlength=COLOR_BINS) for c in range(3)]).astype(np.float64)
        return hist / hist.sum() * 3  # each channel sums to 1

    def measure(self, frames: list[np.ndarray], times: list[float]) -> dict:
        import cv2

        motions, moved, cut = [], [], False
        grey = small = hist = None
        for frame, t in zip(frames, times, strict=True):
            small = self._small(frame)
            grey = cv2.cvtColor(small, cv2.COLOR_RGB2GRAY).astype(np.float32)
            hist = self._hist(small)
            if self._prev_grey is not None and self._prev_grey.shape == grey.shape:
                change = np.abs(grey - self._prev_grey)
                diff = float(change.mean())
                moved.append(float((change > MOVED_LEVEL).mean()))
                motions.append(diff / 255.0)
                dt = t - self._prev_t if self._prev_t is not None else 0.5
                self._frozen_s = self._frozen_s + max(dt, 0.0) if diff < 0.05 else 0.0
            bc = float(np.sum(np.sqrt(hist * self._prev_hist)) / 3) if self._prev_hist is not None else 1.0
            if math.sqrt(max(0.0, 1.0 - bc)) > self.config.cut_distance:
                cut = True
            self._prev_grey, self._prev_hist, self._prev_t = grey, hist, t
        brightness = float(grey.mean())
        contrast = float(grey.std())
        # Laplacian energy relative to the picture's own contrast, so a dim but sharp scene is not "blurred".
        sharpness = float(cv2.Laplacian(grey, cv2.CV_32F).var()) / (contrast**2 + 1.0)
        trouble = None
        if brightness < self.config.dark_level:
            trouble = "dark"
        elif contrast < self.config.covered_std:
            trouble = "covered"
        elif self._frozen_s >= self.config.frozen_after_s:
            trouble = "frozen"
        elif sharpness < self.config.blur_level:
            trouble = "blurred"
        return {"motion": round(float(np.mean(motions)) if motions else 0.0, 4), "scene_cut": cut, "grey": grey,
                "moved": max(moved) if moved else 1.0,  # the first frame of a source: everything is new
                "camera_trouble": trouble, "brightness": round(brightness, 1), "contrast": round(contrast, 1),
                "sharpness": round(sharpness, 3), "colour_hist": hist, "thumb": cv2.resize(
                    grey, (THUMB, THUMB), interpolation=cv2.INTER_AREA) / 255.0}


class MotionGate:
    """Whether the costly models (detector, faces, pose) look at this second, or the last second's findings stand.

    Frigate's rule: a still camera is looked at only when something moves. A second runs the models when more
    than `moved_share` of the small picture moved between any two of its frames (the previous second's last
    frame included), at a scene cut and on a source's first second. Every `keepalive_s` seconds they look again
    if anything in the small picture changed since they last looked (a change too slow or too small to count
    as motion: a parked car arriving by inches, a far-off person), so it is still seen; a picture the same as
    the one they last looked at would give the same findings, and is not looked at again. `moved_share=None`
    runs them on every second."""

    def __init__(self, moved_share: float | None, keepalive_s: float):
        self.moved_share, self.keepalive_s = moved_share, keepalive_s
        self.reset()

    def reset(self) -> None:
        self._last_run_t: float | None = None
        self._last_grey: np.ndarray | None = None  # the small grey picture the models last looked at

    def _changed_since_last_run(self, grey: np.ndarray | None) -> bool:
        last = self._last_grey
        if grey is None or last is None or last.shape != grey.shape:
            return True
        return bool((np.abs(grey - last) > MOVED_LEVEL).any())

    def runs(self, stats: dict, t: float) -> bool:
        """True when this second (its last frame at `t`) must run the models; remembers it as the last run."""
        grey = stats.get("grey")
        if (self.moved_share is None or self._last_run_t is None or stats["scene_cut"]
                or stats["moved"] > self.moved_share
                or (not 0 <= t - self._last_run_t < self.keepalive_s and self._changed_since_last_run(grey))):
            self._last_run_t, self._last_grey = t, grey
            return True
        return False
