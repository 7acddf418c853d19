"""Text on screen: PP-OCRv4 (detection + recognition, ONNX, from the `rapidocr-onnxruntime` package) on one frame.

The package carries its three ONNX graphs (text detection, direction classifier, recognition with a 6,623-character
dictionary); nothing is downloaded. ONNX Runtime runs on one intra-op thread, as every stage does. Readings are
`{"text", "box": [x0, y0, x1, y1] (pixels of that frame), "score"}`, best first by position (top to bottom).
"""

from __future__ import annotations

import re

import numpy as np

DEFAULT_SIDE = 640  # the detector sees the frame with its longer side at most this (chosen on signs val)
DEFAULT_MIN_SCORE = 0.5  # recognition confidence a reading needs (rapidocr's own default)
# PP-OCRv4's recogniser (trained mostly on Chinese) rarely emits the space between Latin words: "DANGERHIGHVOLTAGE".
# Its space class's probability is multiplied by this before CTC decoding (chosen on signs val,
# docs/results/signs_ocr.json: 1 -> 0.55 of val words read, 30 -> 0.91, 100 -> 0.98).
DEFAULT_SPACE_BOOST = 100.0
_SPACE = re.compile(r"\s+")
_EDGE = " .,:;!?'\"`|_-~()[]{}"


def normalise(text: str) -> str:
    """The text as an event label: spaces collapsed, edge punctuation dropped, upper case ("Exit ." -> "EXIT")."""
    return _SPACE.sub(" ", str(text)).strip(_EDGE).upper()


class TextReader:
    """PP-OCRv4 on one RGB frame (one ONNX Runtime thread). Stateless: one per process is shared by streams."""

    def __init__(self, side: int = DEFAULT_SIDE, min_score: float = DEFAULT_MIN_SCORE, direction: bool = False,
                 space_boost: float = DEFAULT_SPACE_BOOST):
        try:
            from rapidocr_onnxruntime import RapidOCR
        except ImportError as exc:  # set-up not run: say how to fix it, not a traceback deep in a stage
            raise RuntimeError("text on screen needs rapidocr-onnxruntime: run ./scripts/bootstrap.sh "
                               "(or pass --no-ocr)") from exc
        self.side, self.min_score = int(side), float(min_score)
        self.engine = RapidOCR(intra_op_num_threads=1, inter_op_num_threads=1, use_cls=direction,
                               det_limit_side_len=self.side, det_limit_type="max", text_score=self.min_score)
        self.space_boost = float(space_boost)
        if self.space_boost != 1.0:
            self.engine.text_rec.postprocess_op = SpaceBoost(self.engine.text_rec.postprocess_op, self.space_boost)

    def read(self, rgb: np.ndarray) -> list[dict]:
        """What is written in one H x W x 3 uint8 RGB frame."""
        if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
            raise ValueError(f"frames must be H x W x 3 uint8 RGB, got {rgb.shape} {rgb.dtype}")
        bgr = np.ascontiguousarray(rgb[:, :, ::-1])
        found, _ = self.engine(bgr)
        out = []
        for quad, text, score in found or []:
            text = _SPACE.sub(" ", str(text)).strip()
            if not normalise(text) or float(score) < self.min_score:
                continue
            pts = np.asarray(quad, dtype=np.float32)
            box = [round(float(pts[:, 0].min()), 1), round(float(pts[:, 1].min()), 1),
                   round(float(pts[:, 0].max()), 1), round(float(pts[:, 1].max()), 1)]
            out.append({"text": text, "box": box, "score": round(float(score), 3)})
        return sorted(out, key=lambda r: (r["box"][1], r["box"][0]))


class SpaceBoost:
    """The recogniser's CTC decoder with the space class's probabilities scaled by `factor` first."""

    def __init__(self, decode, factor: float):
        self.decode, self.factor = decode, float(factor)
        self.space = decode.character.index(" ")
        self.character = decode.character

    def __call__(self, preds: np.ndarray, *args, **kwargs):
        preds = np.array(preds, dtype=np.float32, copy=True)
        preds[:, :, self.space] *= self.factor
        return self.decode(preds, *args, **kwargs)


def words(readings: list[dict]) -> list[str]:
    """The normalised words of some readings, in reading order."""
    return [w for r in readings for w in normalise(r["text"]).split()]
