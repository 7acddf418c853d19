"""Arrays kept on disk between processes (`models/cache.py`): computed once, read back, never an error."""

from __future__ import annotations

import numpy as np

from models.cache import content_key, stored_array


def test_computed_once_then_read_back_and_a_broken_file_is_recomputed(tmp_path, monkeypatch):
    monkeypatch.setenv("FORESIGHT_CACHE", str(tmp_path))
    calls = []

    def compute():
        calls.append(1)
        return np.arange(6, dtype=np.float32).reshape(2, 3)

    key = content_key("model", "rule a", "rule b")
    assert key != content_key("model", "rule a", "rule c") and key == content_key("model", "rule a", "rule b")
    first = stored_array("test", key, compute)
    again = stored_array("test", key, compute)
    assert len(calls) == 1 and np.array_equal(first, again) and again.dtype == np.float32
    (path,) = (tmp_path / "arrays").glob("test-*.npy")
    path.write_bytes(b"\x93NUMPY half-written")
    assert np.array_equal(stored_array("test", key, compute), first) and len(calls) == 2  # recomputed, rewritten
    assert np.array_equal(stored_array("test", key, compute), first) and len(calls) == 2


def test_a_cache_path_that_is_a_file_is_only_slower(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    monkeypatch.setenv("FORESIGHT_CACHE", str(blocker))
    assert stored_array("test", "k", lambda: np.ones(2)).tolist() == [1.0, 1.0]
