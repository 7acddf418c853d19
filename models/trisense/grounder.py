"""Inference API: load a checkpoint, ground a text query in a clip's per-second features.

Returns moments in the design's result schema
`{"query","start","end","score","modality_weights":{"visual","audio","speech"}}`. Clips longer than
the model's window are covered by half-overlapping windows whose spans are merged with temporal NMS.
A checkpoint with a calibrated `abstain_threshold` answers "not found" (no moment) when its best moment scores
below it; `Grounder.answer` says so together with that best score. A checkpoint with a fusion file next to it
(`<name>.fusion.json`, `models/trisense/fusion.py`) answers with the calibrated fusion of its moments and text
matching instead, held to the fusion's threshold.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from models.sentences import SentenceEncoder, shared_encoder
from models.trisense import SHIPPED_CHECKPOINT
from models.trisense.baselines import TextMatchBaseline
from models.trisense.checkpoint import load_checkpoint, save_checkpoint
from models.trisense.config import TriSenseConfig
from models.trisense.decode import SpanPrediction
from models.trisense.evidence import batch_evidence, evidence_arrays
from models.trisense.features import MODALITIES, ClipFeatures, batch_arrays
from models.trisense.fusion import FusionConfig, fuse
from models.trisense.memory import SecondSelector, second_keys, seconds_to_ranges
from models.trisense.moments import Answer, Moment, nms_moments
from models.trisense.runtime import OnnxBackend, TorchBackend, load_backend

FUSION_CANDIDATES = 10  # learned moments per query that the fusion may rescore

__all__ = ["Answer", "ClipFeatures", "Grounder", "Moment", "load_checkpoint", "save_checkpoint"]


def fusion_path(checkpoint: str | Path) -> Path:
    """Where a checkpoint's fusion calibration lives: `<name>.fusion.json` next to it."""
    return Path(checkpoint).with_suffix(".fusion.json")


def load_fusion(checkpoint: str | Path) -> FusionConfig | None:
    """The fusion calibration stored next to `checkpoint` (None: the learned grounder answers alone)."""
    path = fusion_path(checkpoint)
    if not path.is_file():
        return None
    return FusionConfig.from_dict(json.loads(path.read_text())["fusion"])


class Grounder:
    """Text query -> ranked moments over one clip's per-second features.

    The network runs through a backend (`models.trisense.runtime`): a loaded checkpoint is ONNX Runtime by
    default, a model passed in is that torch model."""

    def __init__(self, model: Any = None, text_encoder: SentenceEncoder | None = None, meta: dict | None = None,
                 selector: SecondSelector | None = None, selector_context_s: int = 16,
                 fusion: FusionConfig | None = None, backend: OnnxBackend | TorchBackend | None = None):
        """`model`: a torch `TriSenseModel` (or give `backend` instead).
        `selector` (optional): on clips longer than the model window, read only the seconds it selects
        (plus `selector_context_s` around them) instead of every window; see `models.trisense.memory`.
        `fusion` (optional): answer with the calibrated fusion of the model and text matching."""
        if backend is None:
            if model is None:
                raise ValueError("Grounder needs a model or a backend")
            backend = TorchBackend(model.eval(), meta)
        self.backend = backend
        self.fusion = fusion
        self._matcher = None
        self.selector, self.selector_context_s = selector, selector_context_s
        self.config: TriSenseConfig = backend.config
        self.meta = meta if meta is not None else backend.meta
        self._text_encoder = text_encoder
        self.dims = {m: self.config.modality_dim(m) for m in MODALITIES}

    @property
    def model(self) -> Any:
        """The torch model (training, benchmarks); an ONNX-backed grounder loads it, and torch, on first use."""
        return self.backend.torch_model()

    @classmethod
    def load(cls, path: str | Path, text_encoder: SentenceEncoder | None = None, fused: bool = True) -> Grounder:
        """The checkpoint at `path`, with its fusion calibration when it has one and `fused`."""
        backend = load_backend(path)
        return cls(text_encoder=text_encoder, backend=backend, fusion=load_fusion(path) if fused else None)

    @classmethod
    def from_pretrained(cls, path: str | Path | None = None, text_encoder: SentenceEncoder | None = None) -> Grounder:
        """The grounder in `path`, by default the shipped checkpoint."""
        return cls.load(SHIPPED_CHECKPOINT if path is None else path, text_encoder=text_encoder)

    @property
    def text_encoder(self) -> SentenceEncoder:
        if self._text_encoder is None:
            self._text_encoder = shared_encoder()
        return self._text_encoder

    def embed_query(self, query: str) -> np.ndarray:
        if not isinstance(query, str) or not query.strip():
            raise ValueError("query must be a non-empty string")
        return self.text_encoder.encode(query.strip())

    def windows(self, num_seconds: int) -> list[tuple[int, int]]:
        """Half-overlapping windows of at most `max_window_s` seconds covering the clip."""
        w = self.config.max_window_s
        if num_seconds <= w:
            return [(0, num_seconds)]
        stride = max(1, w // 2)
        starts = list(range(0, num_seconds - w + 1, stride))
        if starts[-1] + w < num_seconds:
            starts.append(num_seconds - w)
        return [(s, s + w) for s in starts]

    def score_windows(
        self, query_vec: np.ndarray, windows: list[ClipFeatures], top_k: int = 5
    ) -> list[list[SpanPrediction]]:
        """Spans (in each window's own seconds) for one query over a batch of windows."""
        feats, masks, valid = batch_arrays(windows, self.dims)
        qv = np.broadcast_to(np.asarray(query_vec, dtype=np.float32), (len(windows), self.config.query_dim))
        evidence = self.evidence_arrays(query_vec, windows, valid.shape[1])
        return self.backend.spans(feats, masks, valid, qv, evidence, top_k=top_k, max_span_s=self.config.max_span_s)

    def evidence_arrays(self, query_vecs: np.ndarray, clips: list[ClipFeatures], num_seconds: int):
        """The model's text-aligned evidence `[B,3,T,k]` for these clips, or None for a model built without it."""
        if not self.config.evidence_dim:
            return None
        return evidence_arrays(query_vecs, clips, self.text_encoder, num_seconds)

    def evidence(self, query_vecs: np.ndarray, clips: list[ClipFeatures], num_seconds: int):
        """`evidence_arrays` as a torch tensor (training's evaluation feeds the torch model)."""
        if not self.config.evidence_dim:
            return None
        return batch_evidence(query_vecs, clips, self.text_encoder, num_seconds)

    @property
    def threshold(self) -> float | None:
        """The calibrated abstention threshold: the fusion's when fused (its scores are fused scores), else the
        model's (None: an older model that always answers)."""
        return self.fusion.threshold if self.fusion is not None else self.config.abstain_threshold

    def text_moments(self, query: str, pieces: list[tuple[float, ClipFeatures]]) -> list[Moment]:
        """Text matching's moments (transcript and label events) over `(time_offset, clip)` pieces."""
        if self._matcher is None:
            self._matcher = TextMatchBaseline(self.text_encoder)
        return [Moment(m.query, offset + m.start, offset + m.end, m.score, m.modality_weights)
                for offset, clip in pieces for m in self._matcher.ground(query, clip, top_k=100)]

    def fused(self, query: str, learned: list[Moment], pieces: list[tuple[float, ClipFeatures]],
              top_k: int) -> list[Moment]:
        """`learned` moments rescored with text matching over the same pieces (unchanged when not fused)."""
        if self.fusion is None:
            return nms_moments(learned, top_k)
        return nms_moments(fuse(learned, self.text_moments(query, pieces), self.fusion), top_k)

    def ground_windows(
        self,
        query: str,
        query_vec: np.ndarray,
        pieces: list[tuple[float, ClipFeatures]],
        top_k: int = 5,
    ) -> list[Moment]:
        """Run the model over `(time_offset, window)` pieces in one batch and merge their spans."""
        if not pieces:
            return []
        spans = self.score_windows(query_vec, [clip for _, clip in pieces], top_k=top_k)
        moments = [
            Moment(query, offset + s.start, offset + s.end, s.score, dict(zip(MODALITIES, s.weights, strict=True)))
            for (offset, _), window_spans in zip(pieces, spans, strict=True)
            for s in window_spans
        ]
        return nms_moments(moments, top_k)

    def ground(self, query: str, features: ClipFeatures, top_k: int = 5, abstain: bool = True) -> list[Moment]:
        """Ranked moments (best first) for `query` in `features`; at most `top_k`, none scoring under the
        calibrated threshold unless `abstain=False`."""
        return self.answer(query, features, top_k, abstain).moments

    def answer(self, query: str, features: ClipFeatures, top_k: int = 5, abstain: bool = True) -> Answer:
        """`ground` with the verdict: which moments pass the threshold, and the best score before it."""
        if top_k < 1:
            raise ValueError("top_k must be >= 1")
        if not isinstance(features, ClipFeatures):
            raise ValueError("features must be a ClipFeatures")
        qv = self.embed_query(query)
        if self.selector is not None and features.num_seconds > self.config.max_window_s:
            spans = self.selected_ranges(qv, features)
        else:
            spans = self.windows(features.num_seconds)
        pieces = [(float(s), features.window(s, e)) for s, e in spans]
        k = max(top_k, FUSION_CANDIDATES) if self.fusion is not None else top_k
        moments = self.fused(query.strip(), self.ground_windows(query.strip(), qv, pieces, top_k=k),
                             [(0.0, features)], top_k)
        best = moments[0].score if moments else 0.0
        if abstain and self.threshold is not None:
            moments = [m for m in moments if m.score >= self.threshold]
        return Answer(query.strip(), moments, best, self.threshold)

    def selected_ranges(self, query_vec: np.ndarray, features: ClipFeatures) -> list[tuple[int, int]]:
        """The second ranges the selector picks for this query (compressing the clip first)."""
        if self.selector is None:
            raise ValueError("this grounder has no selector")
        keys, present = second_keys(self.backend, features)
        kept = np.flatnonzero(self.selector.compress(keys, present))
        if kept.size == 0:
            return []
        qc = self.backend.coarse_query(np.asarray(query_vec, dtype=np.float32)[None])[0]
        chosen = kept[self.selector.select(qc, keys[:, kept], present[:, kept])]
        ranges = seconds_to_ranges(chosen, features.num_seconds, self.selector_context_s, self.config.max_window_s)
        return [(s, e) for s, e in ranges]
