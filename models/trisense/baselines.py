"""Baselines the grounder must beat.

(a) `TextMatchBaseline`: no learned model over features at all. It embeds the query and every
    transcript segment and detector label event (audio tags, object labels) with MiniLM and returns
    the spans of the best-matching texts. It is what a keyword/semantic search over ASR and tagger
    output gives.
(b) Fixed equal modality weights: the same TriSense model with the query-based connector disabled
    (`TriSenseConfig.fixed_modality_weights=True`, built by `equal_weights_config`), trained the same way.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from models.sentences import SentenceEncoder, shared_encoder
from models.trisense.config import TriSenseConfig
from models.trisense.features import MODALITIES, ClipFeatures
from models.trisense.moments import Moment, nms_moments


def equal_weights_config(config: TriSenseConfig) -> TriSenseConfig:
    """The same architecture with the connector replaced by equal weights over available modalities."""
    return replace(config, fixed_modality_weights=True)


def modality_weights(modality: str) -> dict[str, float]:
    """A text-matched span's modality weights: all on its modality (audio-visual: half audio, half visual)."""
    weights = dict.fromkeys(MODALITIES, 0.0)
    if modality == "audio-visual":
        weights["audio"] = weights["visual"] = 0.5
    else:
        weights[modality] = 1.0
    return weights


class TextMatchBaseline:
    """Ground a query by semantic similarity to transcript segments and detector labels (the one text matcher:
    the API's search over stored results ranks its candidates with `similarities` too)."""

    def __init__(self, text_encoder: SentenceEncoder | None = None) -> None:
        self._text_encoder = text_encoder

    @property
    def text_encoder(self) -> SentenceEncoder:
        if self._text_encoder is None:
            self._text_encoder = shared_encoder()
        return self._text_encoder

    def candidates(self, features: ClipFeatures) -> list[tuple[str, float, float, str]]:
        """`(text, start, end, modality)` for every transcript segment and label event."""
        out = []
        for seg in features.transcript:
            text = str(seg.get("text", "")).strip()
            if text:
                out.append((text, float(seg["start"]), float(seg["end"]), "speech"))
        for ev in features.events:
            label = str(ev.get("label", "")).strip()
            if label:
                modality = ev.get("modality", "visual")
                out.append((label, float(ev["start"]), float(ev["end"]), modality))
        return out

    def similarities(self, query: str, texts: list[str]) -> np.ndarray:
        """Cosine similarity (MiniLM) of the query to each text; ValueError for an empty query."""
        if not isinstance(query, str) or not query.strip():
            raise ValueError("query must be a non-empty string")
        q = self.text_encoder.encode(query.strip())
        return self.text_encoder.encode(texts) @ q

    def ground(self, query: str, features: ClipFeatures, top_k: int = 5) -> list[Moment]:
        """Best-matching transcript/label spans; empty when the clip has neither (a miss in the metrics)."""
        if not isinstance(query, str) or not query.strip():
            raise ValueError("query must be a non-empty string")
        cands = self.candidates(features)
        if not cands:
            return []
        scores = self.similarities(query, [c[0] for c in cands])
        moments = [Moment(query.strip(), start, end, float(np.clip(score, 0.0, 1.0)), modality_weights(modality))
                   for (_, start, end, modality), score in zip(cands, scores, strict=True)]
        return nms_moments(moments, top_k)
