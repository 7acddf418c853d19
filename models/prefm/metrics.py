"""Event-parsing metrics with the semantics of PreFM's evaluation code (and HAN's Type@AV / Event@AV).

All inputs are per-video arrays of shape (T, C): T seconds, C classes. Scores are computed per video;
the caller averages them over videos (``summarize``). Conventions, as in the reference code:

* F1 of a class is ``2TP / (2TP + FP + FN)``; only classes with a positive in prediction or ground
  truth count; a video where no class counts scores 1.0.
* Events are maximal runs of positive seconds. A predicted event is a TP when its IoU with *any* GT
  event of the class reaches the threshold (no one-to-one matching), else an FP; a GT event no
  prediction reaches is an FN.
* tIoU thresholds are 0.1 ... 0.9 compared exactly (``10 * inter >= k * union``). The reference code
  uses ``np.arange(0.1, 1.0, 0.1)``, whose 0.3 and 0.7 are a hair above the decimals, so it rejects an
  IoU of exactly 3/10 or 7/10; we do not reproduce that rounding artefact.
* Per-second mAP: sklearn ``average_precision_score`` over the class vector of each second. Seconds
  without any GT class get AP = 0 (not skipped), exactly as in PreFM's code; this lowers the value on
  clips with background seconds.
* Type@AV = mean of the audio, visual and audio-visual F1; Event@AV = F1 over pooled audio and visual
  counts per class (HAN / VALOR), both at segment level and at event level (tIoU 0.5).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from sklearn.metrics import average_precision_score

TIOU_TENTHS = tuple(range(1, 10))  # thresholds 0.1 ... 0.9 as integer tenths


def _check(pred: np.ndarray, gt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    pred, gt = np.asarray(pred), np.asarray(gt)
    if pred.shape != gt.shape or pred.ndim != 2:
        raise ValueError(f"prediction {pred.shape} and ground truth {gt.shape} must both be (T, C)")
    return (pred > 0).astype(np.int64), (gt > 0).astype(np.int64)


def _f1_over_classes(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> float:
    counted = (tp + fp + fn) > 0
    if not counted.any():
        return 1.0
    return float(np.mean(2 * tp[counted] / (2 * tp[counted] + fp[counted] + fn[counted])))


# -- segment level ----------------------------------------------------------------------------------


def segment_counts(pred: np.ndarray, gt: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    p, g = _check(pred, gt)
    return (p * g).sum(0), (p * (1 - g)).sum(0), ((1 - p) * g).sum(0)


def segment_f1(pred: np.ndarray, gt: np.ndarray) -> float:
    """Per-second F1 of one video, averaged over the classes present in prediction or GT."""
    return _f1_over_classes(*segment_counts(pred, gt))


# -- event level ------------------------------------------------------------------------------------


def extract_events(seq: np.ndarray) -> list[tuple[int, int]]:
    """Maximal runs of positive seconds as half-open [start, end) pairs."""
    s = (np.asarray(seq) > 0).astype(np.int8)
    edges = np.diff(np.concatenate([[0], s, [0]]))
    return list(zip(np.flatnonzero(edges == 1).tolist(), np.flatnonzero(edges == -1).tolist(), strict=True))


def _reaches(a: tuple[int, int], b: tuple[int, int], tenths: int) -> bool:
    inter = max(0, min(a[1], b[1]) - max(a[0], b[0]))
    union = (a[1] - a[0]) + (b[1] - b[0]) - inter
    return 10 * inter >= tenths * union


def event_counts(pred: np.ndarray, gt: np.ndarray, tenths: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-class event TP, FP, FN at tIoU = tenths / 10 (any-match, no one-to-one assignment)."""
    p, g = _check(pred, gt)
    n = p.shape[1]
    tp, fp, fn = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64)
    for c in range(n):
        ep, eg = extract_events(p[:, c]), extract_events(g[:, c])
        for e in ep:
            if any(_reaches(e, x, tenths) for x in eg):
                tp[c] += 1
            else:
                fp[c] += 1
        fn[c] = sum(not any(_reaches(x, e, tenths) for e in ep) for x in eg)
    return tp, fp, fn


def event_f1(pred: np.ndarray, gt: np.ndarray, tenths: Iterable[int] = TIOU_TENTHS) -> list[float]:
    """Event-level F1 of one video at each threshold (default 0.1 ... 0.9)."""
    return [_f1_over_classes(*event_counts(pred, gt, k)) for k in tenths]


def pooled_class_f1(preds: Iterable[np.ndarray], gts: Iterable[np.ndarray], tenths: int = 5) -> dict[int, float]:
    """Event F1 per class at one tIoU, TP/FP/FN pooled over videos, for each class with a true event.

    Unlike the per-video average (``summarize``), an empty prediction scores 0 here, so model selection on it
    cannot reward silence; a class with no true event is left out (false events on it change no score)."""
    total = None
    for p, g in zip(preds, gts, strict=True):
        counts = np.stack(event_counts(p, g, tenths))
        total = counts if total is None else total + counts
    if total is None:
        return {}
    tp, fp, fn = total
    return {k: float(2 * tp[k] / (2 * tp[k] + fp[k] + fn[k])) for k in range(len(tp)) if tp[k] + fn[k] > 0}


# -- per-second mAP ---------------------------------------------------------------------------------


def perframe_map(prob: np.ndarray, gt: np.ndarray) -> float:
    """Mean over seconds of the AP of the class ranking; seconds with no GT class count as AP 0."""
    prob, gt = np.asarray(prob, dtype=np.float64), np.asarray(gt)
    if prob.shape != gt.shape or prob.ndim != 2:
        raise ValueError(f"scores {prob.shape} and ground truth {gt.shape} must both be (T, C)")
    aps = [float(average_precision_score(g > 0, p)) if (g > 0).any() else 0.0 for p, g in zip(prob, gt, strict=True)]
    return float(np.mean(aps)) if aps else 0.0


# -- Type@AV and Event@AV ---------------------------------------------------------------------------


def event_at_av_segment(pred_a: np.ndarray, pred_v: np.ndarray, gt_a: np.ndarray, gt_v: np.ndarray) -> float:
    """Segment-level Event@AV: per-class F1 over the summed audio and visual counts."""
    ca, cv = segment_counts(pred_a, gt_a), segment_counts(pred_v, gt_v)
    return _f1_over_classes(*(x + y for x, y in zip(ca, cv, strict=True)))


def event_at_av_event(pred_a: np.ndarray, pred_v: np.ndarray, gt_a: np.ndarray, gt_v: np.ndarray,
                      tenths: int = 5) -> float:
    """Event-level Event@AV at one tIoU: per-class F1 over the summed audio and visual event counts."""
    ca, cv = event_counts(pred_a, gt_a, tenths), event_counts(pred_v, gt_v, tenths)
    return _f1_over_classes(*(x + y for x, y in zip(ca, cv, strict=True)))


# -- one video, all metrics -------------------------------------------------------------------------


def video_metrics(probs: dict[str, np.ndarray], gts: dict[str, np.ndarray], threshold: float = 0.5) -> dict[str, float]:
    """All metrics of one video. ``probs``/``gts`` hold (T, C) arrays under "audio", "visual" (AVVP)
    and/or "av". AVVP binarizes audio and visual at ``threshold`` and sets AV = audio AND visual; the
    AV score for mAP is ``sqrt(p_audio * p_visual)``. AVEL (only "av") is scored on the AV head alone.
    """
    out: dict[str, float] = {}
    if "audio" in probs and "visual" in probs:
        bin_a = (probs["audio"] >= threshold).astype(np.int64)
        bin_v = (probs["visual"] >= threshold).astype(np.int64)
        bins = {"audio": bin_a, "visual": bin_v, "av": bin_a * bin_v}
        scores = {"audio": probs["audio"], "visual": probs["visual"],
                  "av": np.sqrt(probs["audio"] * probs["visual"])}
        truth = {"audio": gts["audio"], "visual": gts["visual"], "av": gts["audio"] * gts["visual"]}
    else:
        bins = {"av": (probs["av"] >= threshold).astype(np.int64)}
        scores = {"av": probs["av"]}
        truth = {"av": gts["av"]}
    for m in bins:
        out[f"seg_f1_{m}"] = segment_f1(bins[m], truth[m])
        evf = event_f1(bins[m], truth[m])
        for k, f in zip(TIOU_TENTHS, evf, strict=True):
            out[f"evt_f1_{k:02d}_{m}"] = f
        out[f"evt_f1_avg_{m}"] = float(np.mean(evf))
        out[f"map_{m}"] = perframe_map(scores[m], truth[m])
    if "audio" in bins:
        out["type_av_seg"] = (out["seg_f1_audio"] + out["seg_f1_visual"] + out["seg_f1_av"]) / 3
        out["event_av_seg"] = event_at_av_segment(bins["audio"], bins["visual"], truth["audio"], truth["visual"])
        out["type_av_evt"] = (out["evt_f1_05_audio"] + out["evt_f1_05_visual"] + out["evt_f1_05_av"]) / 3
        out["event_av_evt"] = event_at_av_event(bins["audio"], bins["visual"], truth["audio"], truth["visual"])
    return out


def summarize(per_video: list[dict[str, float]]) -> dict[str, float]:
    """Average per-video metrics over videos, in percent, and add the selection score ``mean_evt_f1``
    (mean event-level F1 over tIoU 0.1-0.9, averaged over the modalities present)."""
    if not per_video:
        raise ValueError("no videos to summarize")
    keys = per_video[0].keys()
    out = {k: 100.0 * float(np.mean([v[k] for v in per_video])) for k in keys}
    mods = [m for m in ("audio", "visual", "av") if f"evt_f1_avg_{m}" in out]
    out["mean_evt_f1"] = float(np.mean([out[f"evt_f1_avg_{m}"] for m in mods]))
    out["videos"] = float(len(per_video))
    return out
