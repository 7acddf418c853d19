"""PreFM metrics against hand-computed cases."""

import numpy as np
import pytest

from models.prefm.metrics import (
    event_at_av_event,
    event_at_av_segment,
    event_f1,
    extract_events,
    perframe_map,
    segment_f1,
    summarize,
    video_metrics,
)


def col(*bits):
    return np.array(bits, dtype=np.int64)[:, None]


def test_extract_events_runs_half_open():
    assert extract_events(np.array([1, 1, 0, 0, 1, 0, 1])) == [(0, 2), (4, 5), (6, 7)]
    assert extract_events(np.zeros(4)) == []


def test_segment_f1_counts_only_classes_present():
    # class 0: pred 1100, gt 1010 -> TP1 FP1 FN1 -> F1 = 2/4 = 0.5
    # class 1: pred 0000, gt 0000 -> skipped; class 2: pred 0001, gt 0000 -> F1 0
    pred = np.array([[1, 0, 0], [1, 0, 0], [0, 0, 0], [0, 0, 1]])
    gt = np.array([[1, 0, 0], [0, 0, 0], [1, 0, 0], [0, 0, 0]])
    assert segment_f1(pred, gt) == pytest.approx((0.5 + 0.0) / 2)


def test_segment_f1_all_negative_is_one():
    z = np.zeros((5, 3))
    assert segment_f1(z, z) == 1.0


def test_event_f1_any_match_and_thresholds():
    # GT event [0, 10); prediction [0, 4): IoU 0.4 -> TP for tIoU <= 0.4, else FP + FN.
    gt = col(*([1] * 10))
    pred = col(*([1] * 4 + [0] * 6))
    f = event_f1(pred, gt)
    assert f[:4] == [1.0] * 4
    assert f[4:] == [0.0] * 5  # TP0 FP1 FN1 -> 0


def test_event_f1_exact_tenths_boundary():
    # IoU exactly 3/10 must pass tIoU 0.3 (the reference's float 0.30000000000000004 would reject it).
    gt = col(*([1] * 10))
    pred = col(*([1] * 3 + [0] * 7))
    assert event_f1(pred, gt, tenths=[3]) == [1.0]
    assert event_f1(pred, gt, tenths=[4]) == [0.0]


def test_event_f1_no_one_to_one_matching():
    # Two predicted events both overlap the single GT event with IoU >= 0.1: both are TP (reference
    # semantics), and the GT is matched: F1 = 2*2 / (2*2 + 0 + 0) = 1.
    gt = col(1, 1, 1, 1, 1, 1)
    pred = col(1, 1, 0, 1, 1, 0)
    assert event_f1(pred, gt, tenths=[1]) == [1.0]
    # At tIoU 0.5 each prediction has IoU 2/6: TP0 FP2 FN1 -> 0.
    assert event_f1(pred, gt, tenths=[5]) == [0.0]


def test_perframe_map_counts_empty_seconds_as_zero():
    prob = np.array([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]])
    gt = np.array([[1, 0], [1, 0], [0, 0]])
    # second 0: AP 1; second 1: positive ranked 2nd -> precision 1/2 -> AP 0.5; second 2: no GT -> 0
    assert perframe_map(prob, gt) == pytest.approx((1.0 + 0.5 + 0.0) / 3)


def test_event_at_av_pools_audio_and_visual_counts():
    # One class. Audio: TP 2 FP 0 FN 0; visual: TP 0 FP 1 FN 1 (segment level).
    pa, ga = col(1, 1, 0, 0), col(1, 1, 0, 0)
    pv, gv = col(0, 0, 1, 0), col(0, 0, 0, 1)
    assert event_at_av_segment(pa, pv, ga, gv) == pytest.approx(2 * 2 / (2 * 2 + 1 + 1))
    # Event level @0.5: audio 1 TP; visual pred [2,3) vs gt [3,4) -> FP1, FN1 -> 2/(2+2)
    assert event_at_av_event(pa, pv, ga, gv) == pytest.approx(2 / 4)


def test_video_metrics_avvp_type_at_av_and_and_rule():
    gt_a = np.array([[1], [1], [0], [0]], dtype=float)
    gt_v = np.array([[1], [0], [0], [1]], dtype=float)
    pa = np.array([[0.9], [0.8], [0.1], [0.2]])
    pv = np.array([[0.7], [0.2], [0.1], [0.9]])
    m = video_metrics({"audio": pa, "visual": pv}, {"audio": gt_a, "visual": gt_v})
    assert m["seg_f1_audio"] == 1.0 and m["seg_f1_visual"] == 1.0
    # AV prediction = audio AND visual = [1,0,0,0]; AV GT = [1,0,0,0]
    assert m["seg_f1_av"] == 1.0
    assert m["type_av_seg"] == pytest.approx(1.0)
    # AV score for mAP is sqrt(pa * pv); the single class is ranked first whenever GT is positive
    assert m["map_av"] == pytest.approx(1.0 / 4)


def test_video_metrics_avel_and_summary():
    gt = np.array([[1, 0], [1, 0], [0, 1]], dtype=float)
    p = np.array([[0.9, 0.1], [0.4, 0.2], [0.1, 0.7]])
    m = video_metrics({"av": p}, {"av": gt})
    assert "seg_f1_audio" not in m
    # class 0: pred 100 vs gt 110 -> 2/3; class 1: exact -> 1
    assert m["seg_f1_av"] == pytest.approx((2 / 3 + 1) / 2)
    s = summarize([m, m])
    assert s["seg_f1_av"] == pytest.approx(100 * (2 / 3 + 1) / 2)
    assert s["mean_evt_f1"] == pytest.approx(s["evt_f1_avg_av"])


def test_shape_mismatch_raises():
    with pytest.raises(ValueError):
        segment_f1(np.zeros((3, 2)), np.zeros((4, 2)))
