"""What the visual analysis is told: the detector, pose and faces, the picture checks' levels, the motion gate."""

from __future__ import annotations

from dataclasses import dataclass

from models.encoders.detectors import DEFAULT_DETECTOR
from models.errors import BadInput

POSE_NAMES: tuple[str, ...] = ("mediapipe", "movenet-multipose")  # --pose NAME
DEFAULT_POSE = "movenet-multipose"  # chosen on the labelled set and corpus v4 val: docs/perception.md, "Pose"


def check_pose(name: str) -> str:
    """`name` if it is a pose model, else BadInput listing the names (called before any model loads)."""
    if name not in POSE_NAMES:
        raise BadInput(f"unknown pose model {name!r}; choose one of: {', '.join(POSE_NAMES)}")
    return name


@dataclass
class VisualConfig:
    detector: str = DEFAULT_DETECTOR  # a name of models/encoders/detectors.py:DETECTOR_NAMES
    yolo_size: int = 416  # network input side; 320 is ~40% cheaper and misses more small objects
    yolo_conf: float = 0.25
    yolo_nms: float = 0.45
    pose: bool = True
    pose_model: str = DEFAULT_POSE  # POSE_NAMES (--pose; docs/perception.md)
    num_poses: int = 2
    faces: bool = True
    num_faces: int = 4
    thumb_side: int = 160  # width of the grey copy used for motion, cuts and camera checks
    dark_level: float = 28.0  # mean luma below this: dark
    covered_std: float = 7.0  # luma spread below this on a lit frame: something covers the lens
    blur_level: float = 0.08  # Laplacian variance over luma variance below this: blurred
    cut_distance: float = 0.2  # Bhattacharyya distance of colour histograms that counts as a cut
    frozen_after_s: float = 2.0  # identical frames for this long: frozen
    prompt: str | None = None  # a camera's fitted visual prompt (.npz, training/methods/acavp), applied to every frame first
    detect_every_frame: bool = False  # tracking: the detector on every sampled frame, not only the middle one
    track_floor: float | None = None  # tracking: the tracker's frames keep boxes down to this score (None: as usual)
    motion_gate: float | None = 0.002  # share of the picture that must move for the models to look again (None: always)
    keepalive_s: float = 5.0  # on a still picture the models look this often, if anything changed since they last did
