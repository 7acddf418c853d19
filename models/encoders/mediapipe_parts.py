"""The MediaPipe Tasks parts the pose and face landmarkers use, without MediaPipe's front doors.

`import mediapipe` runs `mediapipe/tasks/python/__init__.py`, which imports every task family (audio, text,
vision), and `vision/__init__.py` imports its drawing utilities and with them matplotlib.pyplot: about 0.5 s of
imports (0.3 s of it matplotlib, `python -X importtime`) on the critical path of a cold `foresight analyze`.
Here those packages are registered without their `__init__` (`models/bare_packages.py`) and only the
landmarkers' own modules load, so no drawing code and no matplotlib is imported.
"""

from __future__ import annotations

from types import SimpleNamespace

from models.bare_packages import bare_import

_PACKAGES = ("mediapipe", "mediapipe.tasks", "mediapipe.tasks.python", "mediapipe.tasks.python.vision")
_PARTS: SimpleNamespace | None = None


def mediapipe_vision() -> SimpleNamespace:
    """BaseOptions, RunningMode, Image, ImageFormat and the pose and face landmarkers with their options."""
    global _PARTS
    if _PARTS is None:
        def part(name: str):
            return bare_import(_PACKAGES, f"mediapipe.tasks.python.{name}")

        image, pose, face = part("vision.core.image"), part("vision.pose_landmarker"), part("vision.face_landmarker")
        _PARTS = SimpleNamespace(
            BaseOptions=part("core.base_options").BaseOptions,
            RunningMode=part("vision.core.vision_task_running_mode").VisionTaskRunningMode,
            Image=image.Image, ImageFormat=image.ImageFormat,
            PoseLandmarker=pose.PoseLandmarker, PoseLandmarkerOptions=pose.PoseLandmarkerOptions,
            FaceLandmarker=face.FaceLandmarker, FaceLandmarkerOptions=face.FaceLandmarkerOptions)
    return _PARTS
