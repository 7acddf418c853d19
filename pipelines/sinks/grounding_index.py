"""Retrieval over time: per-second features and transcripts in the store, searched coarse-to-fine.

Tables (in the app's store, `pipelines.sinks.store`, which holds the SQL):

* `grounding_clips(source_id, num_seconds, transcript, events)`: one row per indexed source;
* `grounding_seconds(source_id, t, visual, audio, speech, mask, text)`: float32 blobs per second,
  a bitmask of available modalities and the words spoken in that second;
* `grounding_windows(source_id, start, end, vec, present)`: the coarse index, one row per window
  (default 8 s, stride 4 s) holding the mean of the model's per-modality coarse embeddings;
* `grounding_meta(key, value)`: feature dims and a fingerprint of the model that built the windows.

A query is embedded once; cosine against every window's coarse vectors (max over the modalities the
window has) picks a few candidate windows; the full model then scores spans only in a context
around each candidate. Windows are cached in memory as one matrix, so the coarse stage over an hour
of features is a single matrix product.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models.trisense.features import MODALITIES, ClipFeatures, shift_items
from models.trisense.grounder import FUSION_CANDIDATES, Grounder, Moment
from models.trisense.memory import SecondSelector, SelectedMemory, second_keys
from pipelines.sinks.store import Store


@dataclass
class SearchHit:
    """A moment in one stored source."""

    source_id: str
    moment: Moment

    def to_dict(self) -> dict:
        return {"source_id": self.source_id, **self.moment.to_dict()}


def model_fingerprint(grounder: Grounder) -> str:
    """Hash of the coarse head's weights: stored window vectors are only valid for the same head."""
    return grounder.backend.fingerprint()


class GroundingIndex:
    """Index of per-second features; `add` clips, `search` one clip or everything stored."""

    def __init__(
        self,
        db: str | Path | Store,
        grounder: Grounder,
        window_s: int = 8,
        stride_s: int = 4,
        candidates: int = 8,
        context_s: int = 24,
        selector: SecondSelector | None = None,
    ) -> None:
        """`selector` (optional, e.g. `training.methods.mpcache.MPCacheSelector`): pick the seconds the fine
        stage reads from per-second coarse embeddings instead of from window means (see
        `models.trisense.memory`); None keeps the coarse window stage."""
        if window_s < 1 or stride_s < 1 or candidates < 1 or context_s < 0:
            raise ValueError("window_s, stride_s and candidates must be >= 1, context_s >= 0")
        self._owned = not isinstance(db, Store)
        if isinstance(db, Store):
            self.store = db
        else:
            path = Path(db)
            if str(db) != ":memory:" and not path.parent.is_dir():
                raise FileNotFoundError(f"directory for the index does not exist: {path.parent}")
            self.store = Store(db)
        self.grounder = grounder
        self.window_s, self.stride_s = window_s, stride_s
        self.candidates, self.context_s = candidates, context_s
        self._lock = threading.RLock()
        self._cache: tuple[np.ndarray, np.ndarray, list[str], np.ndarray] | None = None
        self.memory = SelectedMemory(grounder.backend, selector) if selector is not None else None
        self._check_meta()

    # ------------------------------------------------------------------ bookkeeping
    def _check_meta(self) -> None:
        dims = json.dumps(self.grounder.dims, sort_keys=True)
        stored = self.store.grounding_meta("dims")
        if stored is not None and stored != dims and self.source_ids():
            raise ValueError(f"index holds features of dims {stored}, the model expects {dims}")
        fingerprint = model_fingerprint(self.grounder)
        layout = f"{self.window_s}/{self.stride_s}"
        self.store.set_grounding_meta({"dims": dims})
        if self.store.grounding_meta("model") != fingerprint or self.store.grounding_meta("windows") != layout:
            self.store.set_grounding_meta({"model": fingerprint, "windows": layout})
            self.reindex()

    def source_ids(self) -> list[str]:
        return self.store.grounding_sources()

    def __len__(self) -> int:
        return self.store.grounding_seconds_total()

    # ------------------------------------------------------------------ writing
    def _window_rows(self, source_id: str, clip: ClipFeatures) -> list[tuple]:
        """Coarse vectors: mean of unit per-second coarse embeddings over each window, per modality."""
        T = clip.num_seconds
        emb, masks = second_keys(self.grounder.backend, clip)  # [3,T,k] (zero where absent), [3,T]
        starts = list(range(0, max(1, T - self.window_s + 1), self.stride_s))
        if starts[-1] + self.window_s < T:
            starts.append(T - self.window_s)
        rows = []
        for s in starts:
            e = min(T, s + self.window_s)
            count = masks[:, s:e].sum(-1)  # [3]
            vec = emb[:, s:e].sum(1) / np.maximum(count, 1)[:, None]
            norms = np.linalg.norm(vec, axis=-1, keepdims=True)
            vec = np.where(norms > 0, vec / np.maximum(norms, 1e-8), 0.0).astype(np.float32)
            present = sum(1 << k for k in range(len(MODALITIES)) if count[k] > 0)
            rows.append((source_id, s, e, vec.tobytes(), present))
        return rows

    def add(self, source_id: str, features: ClipFeatures) -> None:
        """Store (or replace) a source's per-second features, transcript and coarse windows."""
        if not source_id:
            raise ValueError("source_id must be a non-empty string")
        if not isinstance(features, ClipFeatures):
            raise ValueError("features must be a ClipFeatures")
        for m in MODALITIES:
            arr = getattr(features, m)
            if arr is not None and arr.shape[1] != self.grounder.dims[m]:
                raise ValueError(f"{m} features have width {arr.shape[1]}, the index expects {self.grounder.dims[m]}")
        from models.trisense.text import per_second_text

        T = features.num_seconds
        texts = per_second_text(features.transcript, T) if features.transcript else [""] * T
        second_rows = []
        for t in range(T):
            blobs, mask = [], 0
            for k, m in enumerate(MODALITIES):
                arr = getattr(features, m)
                blobs.append(None if arr is None else arr[t].astype(np.float32).tobytes())
                if arr is not None and getattr(features, f"{m}_mask")[t]:
                    mask |= 1 << k
            second_rows.append((source_id, t, *blobs, mask, texts[t]))
        window_rows = self._window_rows(source_id, features)
        with self._lock:
            # per-second labels are kept with the events: stored windows give the grounder the same evidence
            self.store.put_grounding_clip(source_id, T, features.transcript, features.events + features.labels,
                                          second_rows, window_rows)
            self._cache = None
            if self.memory is not None:
                self.memory.forget(source_id)

    def remove(self, source_id: str) -> None:
        with self._lock:
            self.store.remove_grounding_clip(source_id)
            self._cache = None
            if self.memory is not None:
                self.memory.forget(source_id)

    def reindex(self) -> None:
        """Rebuild every coarse window from the stored seconds (after a model or window change)."""
        with self._lock:
            rows = [row for sid in self.source_ids() for row in self._window_rows(sid, self.load(sid))]
            self.store.replace_grounding_windows(rows)
            self._cache = None
            if self.memory is not None:
                self.memory.forget()

    # ------------------------------------------------------------------ reading
    def load(self, source_id: str, start: int = 0, end: int | None = None) -> ClipFeatures:
        """The stored seconds `[start, end)` of a source as ClipFeatures (transcript/events shifted)."""
        clip = self.store.grounding_clip(source_id)
        if clip is None:
            raise ValueError(f"unknown source_id {source_id!r}")
        T, transcript, events = clip
        end = T if end is None else min(end, T)
        rows = self.store.grounding_seconds(source_id, start, end)
        kwargs: dict = {}
        for k, m in enumerate(MODALITIES):
            if rows and rows[0][k] is not None:
                kwargs[m] = np.frombuffer(b"".join(r[k] for r in rows), dtype=np.float32).reshape(len(rows), -1).copy()
                kwargs[f"{m}_mask"] = np.array([bool(r[3] >> k & 1) for r in rows])
        if not rows:
            raise ValueError(f"no stored seconds in [{start}, {end}) of {source_id!r}")
        return ClipFeatures(**kwargs, transcript=shift_items(transcript, start, end),
                            events=shift_items(events, start, end))

    def _windows_matrix(self) -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray]:
        with self._lock:
            if self._cache is None:
                rows = self.store.grounding_windows()
                k = self.grounder.config.coarse_dim
                vecs = np.frombuffer(b"".join(r[3] for r in rows), dtype=np.float32).reshape(len(rows), 3, k)
                present = np.array([[r[4] >> m & 1 for m in range(3)] for r in rows], dtype=bool).reshape(-1, 3)
                spans = np.array([(r[1], r[2]) for r in rows], dtype=np.int64).reshape(-1, 2)
                self._cache = (vecs, present, [r[0] for r in rows], spans)
            return self._cache

    def _candidate_ranges(self, qc: np.ndarray, vecs: np.ndarray, present: np.ndarray, sids: list[str],
                          spans: np.ndarray, selected: np.ndarray) -> dict[str, list[list[int]]]:
        """Coarse stage: the best windows by cosine, grown by the context and merged per source."""
        sims = np.einsum("nmk,mk->nm", vecs, qc)
        sims = np.where(present, sims, -2.0).max(axis=1)
        sims = np.where(selected, sims, -3.0)
        n_cand = min(self.candidates, int(selected.sum()))
        order = np.argsort(-sims)[:n_cand]
        ranges: dict[str, list[list[int]]] = {}
        max_w = self.grounder.config.max_window_s
        for i in sorted(order.tolist(), key=lambda i: (sids[i], spans[i][0])):
            s, e = int(spans[i][0]) - self.context_s, int(spans[i][1]) + self.context_s
            merged = ranges.setdefault(sids[i], [])
            if merged and s <= merged[-1][1] and e - merged[-1][0] <= max_w:
                merged[-1][1] = max(merged[-1][1], e)
            else:
                merged.append([s, e])
        return ranges

    # ------------------------------------------------------------------ searching
    def search(self, query: str, top_k: int = 5, source_ids: list[str] | None = None) -> list[SearchHit]:
        """Ranked moments for `query` over the given sources (default: everything stored)."""
        if top_k < 1:
            raise ValueError("top_k must be >= 1")
        qv = self.grounder.embed_query(query)
        vecs, present, sids, spans = self._windows_matrix()
        if len(sids) == 0:
            return []
        selected = np.ones(len(sids), dtype=bool)
        if source_ids is not None:
            wanted = set(source_ids)
            unknown = wanted - set(self.source_ids())
            if unknown:
                raise ValueError(f"unknown source_id(s): {sorted(unknown)}")
            selected = np.array([s in wanted for s in sids], dtype=bool)
        qc = self.grounder.backend.coarse_query(np.asarray(qv, np.float32)[None])[0]  # [3,k]
        max_w = self.grounder.config.max_window_s
        if self.memory is not None:
            wanted = sorted({sid for sid, keep in zip(sids, selected, strict=True) if keep})
            ranges = {sid: self.memory.ranges(sid, self.load, qc, self.context_s, max_w) for sid in wanted}
        else:
            ranges = self._candidate_ranges(qc, vecs, present, sids, spans, selected)

        # Fine stage: the chosen second ranges of every source, all scored in one batch.
        pieces: list[tuple[str, int, ClipFeatures]] = []
        for sid, rs in ranges.items():
            for s, e in rs:
                s = max(0, s)
                pieces.append((sid, s, self.load(sid, s, e)))
        k = max(top_k, FUSION_CANDIDATES) if self.grounder.fusion is not None else top_k
        spans_per_piece = self.grounder.score_windows(qv, [p[2] for p in pieces], top_k=k)
        by_source: dict[str, list[Moment]] = {}
        for (sid, offset, _), preds in zip(pieces, spans_per_piece, strict=True):
            for p in preds:
                by_source.setdefault(sid, []).append(
                    Moment(query.strip(), offset + p.start, offset + p.end, p.score,
                           dict(zip(MODALITIES, p.weights, strict=True)))
                )
        # A fused grounder rescores each source's moments with text matching over the same seconds.
        hits = [SearchHit(sid, m) for sid, ms in by_source.items()
                for m in self.grounder.fused(query.strip(), ms, [(float(o), c) for s, o, c in pieces if s == sid],
                                             top_k)]
        hits.sort(key=lambda h: -h.moment.score)
        return hits[:top_k]

    def close(self) -> None:
        """Close the store if this index opened it."""
        if self._owned:
            self.store.close()
