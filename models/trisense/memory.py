"""Optional selected memory for long archives: which stored seconds a query's fine grounding reads.

By default the index picks candidate windows by the cosine of the query with each window's mean coarse
embedding, and `Grounder.ground` runs the model over every window of a clip. With a `SecondSelector`
(e.g. `training.methods.mpcache.MPCacheSelector`) both instead treat the per-second coarse embeddings as a
key cache with one "head" per modality and the query's per-modality coarse embedding as the query:

* `compress` runs once per stored source (look-once) and may evict seconds for good;
* `select` runs per query over the kept seconds and returns the ones to read.

Selected seconds are grown by a context margin, merged into runs no longer than the model window,
and only those runs are scored by the fine model. Nothing changes unless a selector is passed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from models.trisense.features import MODALITIES, ClipFeatures


class SecondSelector(Protocol):
    def compress(self, keys: np.ndarray, present: np.ndarray) -> np.ndarray:
        """keys [3,T,k] unit vectors, present [3,T] -> bool [T]: seconds kept for good."""
        ...

    def select(self, query: np.ndarray, keys: np.ndarray, present: np.ndarray) -> np.ndarray:
        """query [3,k], keys [3,T',k], present [3,T'] of the kept seconds -> bool [T']: seconds to read."""
        ...


def second_keys(model: Any, clip: ClipFeatures) -> tuple[np.ndarray, np.ndarray]:
    """Per-second unit coarse embeddings [3,T,k] of a clip and which modalities are present [3,T].

    `model`: a grounder backend (`models.trisense.runtime`, numpy in and out) or a torch `TriSenseModel`."""
    T = clip.num_seconds
    feats, present = {}, np.zeros((len(MODALITIES), T), dtype=bool)
    for k, m in enumerate(MODALITIES):
        arr = getattr(clip, m)
        feats[m] = np.zeros((1, T, model.config.modality_dim(m)), np.float32) if arr is None else arr[None]
        if arr is not None:
            present[k] = getattr(clip, f"{m}_mask")
    if hasattr(model, "coarse_seconds"):
        keys = model.coarse_seconds(feats)[0]
    else:
        from models.trisense.runtime import TorchBackend

        keys = TorchBackend(model).coarse_seconds(feats)[0]
    return keys * present[..., None], present


def seconds_to_ranges(seconds: np.ndarray, total: int, context_s: int, max_window_s: int) -> list[list[int]]:
    """Runs of selected seconds, each grown by `context_s` on both sides, merged while the merged run
    fits in `max_window_s`; longer runs are cut into model-sized pieces."""
    ranges: list[list[int]] = []
    for t in np.sort(np.asarray(seconds, dtype=np.int64)).tolist():
        s, e = max(0, t - context_s), min(total, t + 1 + context_s)
        if ranges and s <= ranges[-1][1] and e - ranges[-1][0] <= max_window_s:
            ranges[-1][1] = max(ranges[-1][1], e)
        elif ranges and s <= ranges[-1][1]:
            ranges.append([ranges[-1][1], e])
        else:
            ranges.append([s, e])
    return ranges


class SelectedMemory:
    """Per-source kept seconds (computed once) and per-query selected ranges, for one model."""

    def __init__(self, model: Any, selector: SecondSelector) -> None:
        self.model, self.selector = model, selector
        self._kept: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, int]] = {}

    def forget(self, source_id: str | None = None) -> None:
        """Drop cached sources (all of them by default): after add, remove or a model change."""
        if source_id is None:
            self._kept.clear()
        else:
            self._kept.pop(source_id, None)

    def _source(self, source_id: str, load: Callable[[str], ClipFeatures]) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        if source_id not in self._kept:
            keys, present = second_keys(self.model, load(source_id))
            kept = np.flatnonzero(self.selector.compress(keys, present))
            self._kept[source_id] = (kept, keys[:, kept], present[:, kept], keys.shape[1])
        return self._kept[source_id]

    def ranges(self, source_id: str, load: Callable[[str], ClipFeatures], query: np.ndarray, context_s: int,
               max_window_s: int) -> list[list[int]]:
        """Second ranges of one source the fine model should read for this query (coarse query [3,k])."""
        kept, keys, present, total = self._source(source_id, load)
        if kept.size == 0:
            return []
        chosen = kept[self.selector.select(query, keys, present)]
        return seconds_to_ranges(chosen, total, context_s, max_window_s)
