"""The one detector interface: every object detector by name (`--detector NAME`, TOML `[analysis] detector`).

A detector has `.name`, `.labels` (the 80 coco.names labels), `.detect(rgb) -> [{"label", "score", "box"}]`
with boxes in pixels of that frame, `.detect_many(frames)` and `.remember(frames)` (see `detector.py`).
"""

from __future__ import annotations

from models.encoders.detector import BatchedDetector
from models.errors import BadInput

DETECTOR_NAMES: tuple[str, ...] = ("yolov3-tiny", "ssd-mobilenetv2", "nanodet", "ssd-mobilenetv2+nanodet")
DEFAULT_DETECTOR = "ssd-mobilenetv2"  # chosen on the labelled set's val split: docs/perception.md
# Measured by benchmarks/detectors.py but not offered: CenterNet lost to NanoDet on val (docs/perception.md).
MEASURED_DETECTORS: tuple[str, ...] = (*DETECTOR_NAMES, "centernet")


def check_detector(name: str) -> str:
    """`name` if it is a detector, else BadInput listing the names (called before any model loads)."""
    if name not in DETECTOR_NAMES:
        raise BadInput(f"unknown detector {name!r}; choose one of: {', '.join(DETECTOR_NAMES)}")
    return name


def make_detector(name: str, conf: float | None = None, size: int | None = None) -> BatchedDetector:
    """A new detector by name (one of MEASURED_DETECTORS); `conf` (score threshold) and `size` (input side)
    default per detector."""
    if name not in MEASURED_DETECTORS:
        check_detector(name)
    kw = {k: v for k, v in (("conf", conf), ("size", size)) if v is not None}
    if name == "ssd-mobilenetv2":
        from models.encoders.ssd import SsdDetector

        return SsdDetector(**kw)
    if name == "nanodet":
        from models.encoders.nanodet import NanodetDetector

        return NanodetDetector(**kw)
    if name == "ssd-mobilenetv2+nanodet":
        from models.encoders.fused import MEMBERS, FusedDetector

        return FusedDetector([make_detector(member, conf=floor) for member, _, floor in MEMBERS],
                             **{k: v for k, v in kw.items() if k == "conf"})
    if name == "centernet":
        from models.encoders.centernet import CenternetDetector

        return CenternetDetector(**kw)
    from models.encoders.detector import ObjectDetector

    return ObjectDetector(**kw)
