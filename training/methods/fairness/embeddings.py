"""Foresight's shared per-second embeddings, read from the feature cache, as rows for the fair head.

`pipelines.sinks.feature_cache.FeatureCache` keeps each video's embedded features as `embedded/visual/<id>.npy` and
`embedded/audio/<id>.npy` (T x D float32, one row per second). `per_second_embeddings` stacks the chosen
modalities of several videos side by side, one row per second, and says which video each row came from, so
the caller can attach the camera or site of each video as the group and fit `fit_fair_head` on the rows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

MODALITIES = ("visual", "audio")


def per_second_embeddings(root: str | Path, video_ids: list[str], modalities: tuple[str, ...] = MODALITIES,
                          ) -> tuple[np.ndarray, np.ndarray]:
    """(x [sum T, D], video index [sum T]) for the cached videos, modalities concatenated per second."""
    bad = [m for m in modalities if m not in MODALITIES]
    if bad or not modalities:
        raise ValueError(f"modalities must come from {MODALITIES}, got {modalities}")
    rows, owner = [], []
    for i, vid in enumerate(video_ids):
        parts = []
        for m in modalities:
            path = Path(root) / "embedded" / m / f"{vid}.npy"
            if not path.is_file():
                raise FileNotFoundError(f"no cached {m} features for {vid} at {path}")
            parts.append(np.asarray(np.load(path, allow_pickle=False), np.float32))
        seconds = min(len(p) for p in parts)  # modalities are cut to the shorter one, as the cache aligns them
        rows.append(np.concatenate([p[:seconds] for p in parts], axis=1))
        owner.append(np.full(seconds, i, np.int64))
    if not rows:
        raise ValueError("no videos given")
    return np.concatenate(rows), np.concatenate(owner)
