"""Moment-retrieval metrics: R@1 at IoU 0.3/0.5/0.7 and mIoU, divided by the number of queries.

TriSense's `mr_eval.py` divides by the number of predictions that carry timestamps, which inflates
scores when the model fails to answer; here every ground-truth query counts and a query without a
prediction is a miss (IoU 0). A query with several ground-truth windows takes the best IoU of the
top-1 prediction against any of them (QVHighlights convention). A point prediction `[t, t]` is kept
as is and has IoU 0 unless the ground truth is the same point.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

IOU_THRESHOLDS: tuple[float, ...] = (0.3, 0.5, 0.7)

Span = Sequence[float]


def temporal_iou(pred: Span, gt: Span) -> float:
    """IoU of two `[start, end]` intervals in seconds (identical points give 1)."""
    ps, pe = float(pred[0]), float(pred[1])
    gs, ge = float(gt[0]), float(gt[1])
    if pe < ps or ge < gs:
        raise ValueError(f"interval ends before it starts: {pred!r} / {gt!r}")
    inter = max(0.0, min(pe, ge) - max(ps, gs))
    union = max(pe, ge) - min(ps, gs)
    if union == 0:
        return 1.0 if (ps, pe) == (gs, ge) else 0.0
    return inter / union


def best_iou(pred: Span, gts: Sequence[Span]) -> float:
    """Best IoU of one prediction against any ground-truth window."""
    if not gts:
        raise ValueError("a query needs at least one ground-truth window")
    return max(temporal_iou(pred, gt) for gt in gts)


def grounding_metrics(
    ground_truth: Mapping[str, Sequence[Span]],
    predictions: Mapping[str, Span | None],
    thresholds: Sequence[float] = IOU_THRESHOLDS,
) -> dict[str, float]:
    """`{"R@0.3","R@0.5","R@0.7","mIoU","n"}` in percent over all ground-truth queries.

    `ground_truth` maps query id -> list of windows; `predictions` maps query id -> top-1 span (or
    None / absent = no prediction). Predictions for unknown ids are ignored.
    """
    n = len(ground_truth)
    if n == 0:
        raise ValueError("no ground-truth queries")
    hits = dict.fromkeys(thresholds, 0)
    total_iou = 0.0
    for qid, gts in ground_truth.items():
        pred = predictions.get(qid)
        if pred is None or len(pred) < 2:
            continue
        iou = best_iou(pred, gts)
        total_iou += iou
        for t in thresholds:
            if iou >= t:
                hits[t] += 1
    result = {f"R@{t}": 100.0 * hits[t] / n for t in thresholds}
    result["mIoU"] = 100.0 * total_iou / n
    result["n"] = float(n)
    return result
