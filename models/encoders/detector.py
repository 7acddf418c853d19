"""Objects in a frame: YOLOv3-tiny (Darknet weights from a registry package) through OpenCV's DNN module.

One detector is shared by every stream of a stage host (`models/shared.py`). It takes batches: a host with
several streams' key frames ready detects in all of them in one forward pass (`remember`), and each stream's
own call then finds its frame's detections (`detect`); cv2.dnn gives bit-identical results either way.
"""

from __future__ import annotations

import threading

import numpy as np

from models.encoders.weights import yolo_files
from models.errors import BadInput

MEMO_SIZE = 64  # batched detections waiting for their call


def coco_labels() -> list[str]:
    """The 80 COCO class names every detector reports (coco.names' spelling)."""
    return [n.strip() for n in yolo_files()[2].read_text().splitlines() if n.strip()]


class BatchedDetector:
    """What every detector shares: the per-frame memo of cross-stream batches (`remember` then `detect`).
    A subclass sets `labels` and implements `detect_many`."""

    name = "detector"
    labels: list[str]

    def __init__(self) -> None:
        self._memo: dict[int, tuple[np.ndarray, list[dict]]] = {}  # id(frame) -> (frame, its detections)
        self._lock = threading.Lock()
        self.served_from_batch = 0  # frames whose detections came from a cross-stream batch

    def detect(self, rgb: np.ndarray) -> list[dict]:
        """Detections in one frame; a frame whose detections a batch already computed (`remember`) is not run
        again."""
        with self._lock:
            hit = self._memo.pop(id(rgb), None)
        if hit is not None and hit[0] is rgb:
            self.served_from_batch += 1
            return hit[1]
        return self.detect_many([rgb])[0]

    def detect_many(self, frames: list[np.ndarray]) -> list[list[dict]]:  # pragma: no cover - abstract
        raise NotImplementedError

    def remember(self, frames: list[np.ndarray]) -> None:
        """Detect in all `frames` at once and keep each result for that very frame's `detect` call (a stage host
        batching the streams' key frames; results are identical to one frame at a time). A frame an earlier batch
        already holds is not run again: a stream whose call waits behind several others is in each of their
        batches, and re-detecting it every time made a backlog grow itself (4 streams: 3093 detections in
        batches for 1200 seconds, docs/performance.md)."""
        with self._lock:
            frames = [f for f in frames if self._memo.get(id(f), (None,))[0] is not f]
        if not frames:
            return
        results = self.detect_many(frames)
        with self._lock:
            for frame, result in zip(frames, results, strict=True):
                self._memo[id(frame)] = (frame, result)
            while len(self._memo) > MEMO_SIZE:  # calls that never came (a stream closed meanwhile)
                self._memo.pop(next(iter(self._memo)))


class ObjectDetector(BatchedDetector):
    """YOLOv3-tiny on one RGB frame; boxes in pixels of that frame."""

    name = "yolov3-tiny"

    def __init__(self, size: int = 416, conf: float = 0.25, nms: float = 0.45):
        import cv2

        super().__init__()
        cv2.setNumThreads(1)
        cfg, weights, _ = yolo_files()
        if not hasattr(cv2.dnn, "readNetFromDarknet"):
            raise BadInput("OpenCV >= 5 dropped the Darknet reader: pip install opencv-python-headless==4.14.0.94")
        self.net = cv2.dnn.readNetFromDarknet(str(cfg), str(weights))
        self.outputs = self.net.getUnconnectedOutLayersNames()
        self.labels = coco_labels()
        self.size, self.conf, self.nms = size, conf, nms

    def detect_many(self, frames: list[np.ndarray]) -> list[list[dict]]:
        """Detections in each frame, from one forward pass over all of them (frames of any sizes)."""
        import cv2

        # blobFromImages takes BGR when swapRB is set; our frames are RGB already, so no swap.
        self.net.setInput(cv2.dnn.blobFromImages(frames, 1 / 255.0, (self.size, self.size), swapRB=False, crop=False))
        outs = self.net.forward(self.outputs)
        if len(frames) == 1:
            outs = [o[None] if o.ndim == 2 else o for o in outs]
        return [self._boxes(np.concatenate([o[i].reshape(-1, o.shape[-1]) for o in outs]), *f.shape[:2])
                for i, f in enumerate(frames)]

    def _boxes(self, rows: np.ndarray, h: int, w: int) -> list[dict]:
        """Darknet region rows of one frame -> its detections after per-class NMS, in that frame's pixels."""
        import cv2

        cls = rows[:, 5:].argmax(1)
        score = rows[:, 5:][np.arange(len(rows)), cls]  # OpenCV's region layer already folds in objectness
        keep = score >= self.conf
        rows, cls, score = rows[keep], cls[keep], score[keep]
        if rows.size == 0:
            return []
        boxes = np.stack([(rows[:, 0] - rows[:, 2] / 2) * w, (rows[:, 1] - rows[:, 3] / 2) * h,
                          rows[:, 2] * w, rows[:, 3] * h], axis=1)
        out = []
        for c in np.unique(cls):  # per-class NMS, as Darknet does
            idx = np.flatnonzero(cls == c)
            kept = cv2.dnn.NMSBoxes(boxes[idx].tolist(), score[idx].tolist(), self.conf, self.nms)
            for k in np.asarray(kept).reshape(-1):
                x, y, bw, bh = boxes[idx[k]]
                x0, y0 = max(0.0, float(x)), max(0.0, float(y))
                x1, y1 = min(float(w), float(x + bw)), min(float(h), float(y + bh))
                out.append({"label": self.labels[int(c)], "score": round(float(score[idx[k]]), 3),
                            "box": [round(x0, 1), round(y0, 1), round(x1, 1), round(y1, 1)]})
        out.sort(key=lambda d: -d["score"])
        return out
