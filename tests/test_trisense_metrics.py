"""Hand-computed checks of the grounding metrics (R@1 at IoU 0.3/0.5/0.7, mIoU over all queries)."""

import pytest

from models.trisense.metrics import best_iou, grounding_metrics, temporal_iou


def test_temporal_iou_hand_cases():
    assert temporal_iou([0, 10], [5, 15]) == pytest.approx(5 / 15)
    assert temporal_iou([0, 10], [0, 10]) == 1.0
    assert temporal_iou([0, 4], [6, 9]) == 0.0
    assert temporal_iou([2, 4], [0, 10]) == pytest.approx(0.2)
    assert temporal_iou([3, 3], [3, 3]) == 1.0
    assert temporal_iou([3, 3], [0, 10]) == 0.0


def test_bad_interval_raises():
    with pytest.raises(ValueError):
        temporal_iou([5, 1], [0, 10])
    with pytest.raises(ValueError):
        best_iou([0, 1], [])


def test_metrics_divide_by_all_queries_and_count_missing_as_miss():
    gt = {"q1": [[0, 10]], "q2": [[20, 30]], "q3": [[40, 50]], "q4": [[0, 4]]}
    preds = {"q1": [0, 10], "q2": [25, 35], "q3": None, "q4": [0, 2], "unknown": [0, 1]}
    m = grounding_metrics(gt, preds)
    # IoUs: 1.0, 1/3, miss, 0.5
    assert m["R@0.3"] == pytest.approx(75.0)
    assert m["R@0.5"] == pytest.approx(50.0)
    assert m["R@0.7"] == pytest.approx(25.0)
    assert m["mIoU"] == pytest.approx(100 * (1 + 1 / 3 + 0 + 0.5) / 4)
    assert m["n"] == 4


def test_absent_prediction_equals_none_and_multiple_windows_take_best():
    gt = {"a": [[0, 10], [30, 40]], "b": [[5, 6]]}
    m = grounding_metrics(gt, {"a": [31, 40]})
    assert m["R@0.7"] == pytest.approx(50.0)  # a: IoU 0.9 with its second window; b: missing
    assert m["mIoU"] == pytest.approx(100 * 0.9 / 2)


def test_empty_ground_truth_raises():
    with pytest.raises(ValueError):
        grounding_metrics({}, {})
