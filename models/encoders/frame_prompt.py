"""A fitted visual prompt for one camera, applied to its frames before the visual encoder sees them.

The prompt (fitted by `training/methods/acavp/`, see docs/training/acavp.md) is stored resolved, as an `.npz`:
`linear` (2 x 2: rotation, shear and scale of the content in pixel-isotropic coordinates), `shift` (2, in
normalised coordinates, [-1, 1] across each side, pixel centres as in `torch.nn.functional.affine_grid(
align_corners=False)`), `gain` and `pattern` (3 x h x w maps, resized to the frame). Per frame: warp the content (uncovered pixels 0), multiply by the gain, add the pattern where
the warp left the picture uncovered, clip to 8 bits. One warp, one multiply, one add: about a millisecond
on a 640-pixel frame. Nothing here imports the training code.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np


class FramePrompt:
    """Callable on an H x W x 3 uint8 RGB frame; returns the prompted frame (same shape and type)."""

    def __init__(self, linear: np.ndarray, shift: np.ndarray, gain: np.ndarray, pattern: np.ndarray,
                 digest: str = ""):
        self.linear = np.asarray(linear, np.float64).reshape(2, 2)
        self.shift = np.asarray(shift, np.float64).reshape(2)
        self.gain = np.ascontiguousarray(np.asarray(gain, np.float32).transpose(1, 2, 0))  # h x w x 3
        self.pattern = np.ascontiguousarray(np.asarray(pattern, np.float32).transpose(1, 2, 0))
        self.digest = digest
        self.warps = not (np.allclose(self.linear, np.eye(2)) and np.allclose(self.shift, 0.0))

    @classmethod
    def load(cls, path: str | Path) -> FramePrompt:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no visual prompt at {path} (fit one with training/methods/acavp, docs/training/acavp.md)")
        with np.load(path) as d:
            return cls(d["linear"], d["shift"], d["gain"], d["pattern"],
                       hashlib.sha256(path.read_bytes()).hexdigest()[:10])

    def pixel_matrix(self, height: int, width: int) -> np.ndarray:
        """The content's map in pixel coordinates (what cv2.warpAffine takes).

        Pixel centre p sits at normalised n = S p + c with S = diag(2/W, 2/H), c = (1/W - 1, 1/H - 1). The
        content map in normalised coordinates is n -> A n + t with A = S L S^-1, so in pixels it is
        p -> L p + S^-1 (A c + t - c).
        """
        s = np.diag([2.0 / width, 2.0 / height])
        s_inv = np.diag([width / 2.0, height / 2.0])
        c = np.array([1.0 / width - 1.0, 1.0 / height - 1.0])
        a = s @ self.linear @ s_inv
        return np.concatenate([self.linear, (s_inv @ (a @ c + self.shift - c))[:, None]], axis=1)

    def __call__(self, frame: np.ndarray) -> np.ndarray:
        import cv2

        if frame.ndim != 3 or frame.shape[2] != 3 or frame.dtype != np.uint8:
            raise ValueError(f"frames must be H x W x 3 uint8 RGB, got {frame.shape} {frame.dtype}")
        h, w = frame.shape[:2]
        x = frame.astype(np.float32) / 255.0
        cover = np.ones((h, w), np.float32)
        if self.warps:
            m = self.pixel_matrix(h, w)
            x = cv2.warpAffine(x, m, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
            cover = cv2.warpAffine(cover, m, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT,
                                   borderValue=0)
        x = x * cv2.resize(self.gain, (w, h), interpolation=cv2.INTER_LINEAR)
        x = x + (1.0 - cover)[..., None] * cv2.resize(self.pattern, (w, h), interpolation=cv2.INTER_LINEAR)
        return (np.clip(x, 0.0, 1.0) * 255.0).round().astype(np.uint8)
