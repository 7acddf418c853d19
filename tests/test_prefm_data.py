"""Loaders for PreFM's release layouts, UnAV-100's JSON, our embedded layout, and window sampling."""

import csv
import json

import numpy as np
import pytest

from models.prefm.labels import unav_class_names
from training.prefm.data import (
    ClipStore,
    collate,
    crop_sample,
    read_split_csv,
    sample_current_indices,
    unav_labels_from_json,
    window_sample,
)


def _save(path, arr):
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, np.asarray(arr, dtype=np.float32))


def write_llp(root, names_lengths, clap=True, teacher=True):
    """The release layout: dataset/LLP/{data/{CLAP,CLIP,st}, label/{label,feature_label}/{audio,visual}}."""
    rng = np.random.default_rng(0)
    rows = []
    for name, n in names_lengths:
        T = 10 * n
        _save(root / "data" / "CLAP" / f"{name}.npy", rng.standard_normal((int(6.4 * T) if clap else T, 768 if clap else 16)))
        _save(root / "data" / "CLIP" / f"{name}.npy", rng.standard_normal((T, 768 if clap else 12)))
        _save(root / "data" / "st" / f"{name}.npy", rng.standard_normal((T, 512 if clap else 8)))
        for m in ("audio", "visual"):
            y = np.zeros((T, 25))
            y[np.arange(T), np.arange(T) % 25] = 1  # second t has class t mod 25
            _save(root / "label" / "label" / m / f"{name}.npy", y)
            if teacher:
                _save(root / "label" / "feature_label" / m / f"{name}.npy", np.full((T, 1536), 0.5) + np.arange(T)[:, None])
        rows.append([1 if n == 1 else 0, n, name, "Speech,Dog"] + [""] * 5)
    (root / "data_info").mkdir(parents=True, exist_ok=True)
    with (root / "data_info" / "train_pd.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["continual_event", "video_num", "filename"] + [f"event_labels_{i}" for i in range(1, 7)])
        w.writerows(rows)


def test_llp_release_layout_with_concatenated_names(tmp_path):
    root = tmp_path / "dataset" / "LLP"
    write_llp(root, [("DPpp6t1d2Rk_90_100", 1), ("ARZ9kIq_bhk_90_100,BE4v9ixDwmA_30_40", 2)])
    assert read_split_csv(root / "data_info" / "train_pd.csv")[1] == ("ARZ9kIq_bhk_90_100,BE4v9ixDwmA_30_40", 20)
    store = ClipStore("llp", root, "train")
    assert store.task == "avvp" and store.audio_rate() == "clap_maps"
    assert store.dims() == {"audio_dim": 768, "visual_dim": 768, "st_dim": 512, "teacher_dim": 1536, "num_classes": 25}
    clip = store.clip(1)
    assert clip.length == 20 and clip.audio.shape == (128, 768)

    s = window_sample(clip, t=3, Lc=10, Lf=5, audio_rate="clap_maps", task="avvp")
    assert s["audio"].shape == (64, 768) and s["visual"].shape == (10, 768) and s["st"].shape == (10, 512)
    # window ends at second 3: positions 0-5 are zero padding, position 9 is second 3
    assert np.all(s["visual"][:6] == 0) and np.array_equal(s["visual"][9], clip.visual[3])
    # CLAP rows: the 64 rows ending at int(6.4 * 4) = 25 -> 39 zero rows then rows 0..24
    assert np.all(s["audio"][:39] == 0) and np.array_equal(s["audio"][39:], clip.audio[:25])
    assert s["labels"].shape == (15, 2, 25) and s["teacher"].shape == (15, 2, 1536)
    # future position k is second 3 + 1 + k, whose class is (4 + k) mod 25
    assert [int(np.argmax(s["labels"][10 + k, 0])) for k in range(5)] == [4, 5, 6, 7, 8]
    assert s["teacher"][10, 1, 0] == pytest.approx(4.5)


def test_window_sampler_one_index_per_chunk_leaves_future(tmp_path):
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(300):
        idx = sample_current_indices(length=30, Lf=5, chunk=10, rng=rng)
        assert len(idx) == 3
        assert 0 <= idx[0] <= 9 and 10 <= idx[1] <= 19 and 20 <= idx[2] <= 24
        seen.update(idx)
    assert seen == set(range(25))  # every valid current second is drawn
    assert sample_current_indices(length=5, Lf=5, chunk=10, rng=rng) == []


def test_unav_layout_from_label_files_and_from_json(tmp_path):
    root = tmp_path / "dataset" / "UnAV-100"
    rng = np.random.default_rng(1)
    (root / "data_info").mkdir(parents=True)
    (root / "data_info" / "test_pd.csv").write_text("filename,length,feature_length\nvidA,12,47\n")
    _save(root / "data" / "CLAP" / "vidA.npy", rng.standard_normal((int(12 * 6.4), 768)))
    _save(root / "data" / "CLIP" / "vidA.npy", rng.standard_normal((12, 768)))
    y = np.zeros((12, 100))
    y[2:5, 7] = 1
    _save(root / "label" / "label_clip_clap" / "test" / "vidA.npy", y)
    _save(root / "label" / "feature_label" / "test" / "vidA.npy", rng.standard_normal((12, 1536)))
    store = ClipStore("unav", root, "test")
    clip = store.clip(0)
    assert store.task == "avel" and clip.labels["av"].shape == (12, 100) and clip.teacher["av"].shape == (12, 1536)
    s = window_sample(clip, 4, 10, 5, store.audio_rate(), store.task)
    assert s["labels"].shape == (15, 100) and s["teacher"].shape == (15, 1536)

    ann = {"database": {
        "vidA": {"subset": "test", "duration": 11.6, "annotations": [
            {"segment": [2.0, 4.7], "label": "dog barking", "label_id": 1},
            {"segment": [0.0, 1.2], "label": "car passing", "label_id": 0}]},
        "vidB": {"subset": "train", "duration": 5.0, "annotations": [
            {"segment": [1.0, 2.0], "label": "dog barking", "label_id": 1}]}}}
    path = tmp_path / "unav100_annotations.json"
    path.write_text(json.dumps(ann))
    assert unav_class_names(path) == ["car passing", "dog barking"]
    labels, names = unav_labels_from_json(path, subset="test")
    assert list(labels) == ["vidA"] and labels["vidA"].shape == (12, 2)
    # centres 2.5, 3.5, 4.5 lie in [2.0, 4.7]; centre 0.5 lies in [0, 1.2]
    assert np.flatnonzero(labels["vidA"][:, 1]).tolist() == [2, 3, 4]
    assert np.flatnonzero(labels["vidA"][:, 0]).tolist() == [0]
    store = ClipStore("unav", root, "test", annotation_json=path)
    assert store.class_names == names and store.clip(0).labels["av"].shape == (12, 2)


def test_embedded_layout_and_offline_crops(tmp_path):
    root = tmp_path / "corpus"
    rng = np.random.default_rng(2)
    (root / "data_info").mkdir(parents=True)
    (root / "data_info" / "test_pd.csv").write_text("filename,length\nclip1,8\nclip2,6\n")
    for name, T in (("clip1", 8), ("clip2", 6)):
        _save(root / "embedded" / "audio" / f"{name}.npy", rng.standard_normal((T, 5)))
        _save(root / "embedded" / "visual" / f"{name}.npy", rng.standard_normal((T, 4)))
        for m in ("audio", "visual"):
            _save(root / "label" / "label" / m / f"{name}.npy", np.zeros((T, 25)))
    store = ClipStore("embedded", root, "test")
    assert store.audio_rate() == "1fps" and store.dims()["teacher_dim"] is None
    c = crop_sample(store.clip(0), 2, 5, "1fps", "avvp")
    assert c["audio"].shape == (5, 5) and c["labels"].shape == (5, 2, 25) and "teacher" not in c
    batch = collate([window_sample(store.clip(i), 3, 10, 2, "1fps", "avvp") for i in range(2)])
    assert batch["audio"].shape == (2, 10, 5) and batch["labels"].shape == (2, 12, 2, 25)


def test_bad_paths_raise_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="dataset folder"):
        ClipStore("llp", tmp_path / "nope", "train")
    (tmp_path / "x" / "data_info").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match="split CSV"):
        ClipStore("llp", tmp_path / "x", "train")
    (tmp_path / "x" / "data_info" / "train_pd.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="expected columns"):
        ClipStore("llp", tmp_path / "x", "train")
    with pytest.raises(ValueError, match="layout"):
        ClipStore("tsv", tmp_path / "x", "train")
