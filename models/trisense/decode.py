"""Spans from the grounder's per-second logits, in numpy: the decoding `modeling_trisense.decode_spans` does in
torch, for the ONNX Runtime path (same candidates, scores and NMS; float32 throughout)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models.trisense.metrics import temporal_iou


@dataclass
class SpanPrediction:
    """One decoded span in window seconds, with its per-modality weights averaged over the span."""

    start: float
    end: float
    score: float
    weights: tuple[float, float, float]


def _log_softmax(x: np.ndarray) -> np.ndarray:
    shifted = x - x.max()
    return shifted - np.log(np.exp(shifted).sum())


def decode_span_arrays(start: np.ndarray, end: np.ndarray, inside: np.ndarray, step_weights: np.ndarray,
                       valid: np.ndarray, top_k: int = 5, max_span_s: int = 64, nms_iou: float = 0.5
                       ) -> list[list[SpanPrediction]]:
    """Best `top_k` spans per sample from logits `[B,T]`, step weights `[B,T,3]` and valid `[B,T]`: candidates by
    `p_start(i) p_end(j)`, score = geometric mean of that boundary confidence and the span's mean inside
    probability, then temporal NMS."""
    results: list[list[SpanPrediction]] = []
    for b in range(valid.shape[0]):
        T = int(valid[b].sum())
        if T == 0:
            results.append([])
            continue
        ls = _log_softmax(start[b, :T].astype(np.float32))
        le = _log_softmax(end[b, :T].astype(np.float32))
        pin = (1.0 / (1.0 + np.exp(-inside[b, :T].astype(np.float32)))).astype(np.float32)
        csum = np.concatenate([np.zeros(1, np.float32), np.cumsum(pin, dtype=np.float32)])
        i = np.arange(T)[:, None]
        j = np.arange(T)[None, :]
        ok = (j >= i) & (j - i < max_span_s)
        with np.errstate(all="ignore"):  # below the diagonal (masked): empty spans divide by zero
            boundary = np.exp((ls[:, None] + le[None, :]) / np.float32(2))
            mean_inside = (csum[j + 1] - csum[i]) / (j - i + 1).astype(np.float32)
            score = np.where(ok, np.sqrt(boundary * mean_inside), np.float32(-1.0)).astype(np.float32)
        flat = score.ravel()
        order = np.argsort(-flat, kind="stable")
        picked: list[SpanPrediction] = []
        weights = step_weights[b, :T]
        for idx in order[: max(64, top_k * 16)].tolist():
            s, e = divmod(idx, T)
            if flat[idx] < 0:
                break
            span = (float(s), float(e + 1))
            if any(temporal_iou(span, (p.start, p.end)) > nms_iou for p in picked):
                continue
            w = weights[s : e + 1].mean(0)
            total = float(w.sum())
            w = w / total if total > 0 else w
            picked.append(SpanPrediction(span[0], span[1], float(flat[idx]), tuple(float(x) for x in w)))
            if len(picked) >= top_k:
                break
        results.append(picked)
    return results
