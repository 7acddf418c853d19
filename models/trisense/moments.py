"""What a grounding answer holds: moments (a span, its score and modality weights) and a query's answer, plus
the non-maximum suppression both the grounder and the text-matching baseline rank with."""

from __future__ import annotations

from dataclasses import dataclass

from models.trisense.decode import temporal_iou
from models.trisense.features import MODALITIES


@dataclass
class Moment:
    """One grounded moment; `to_dict` gives exactly the result-schema entry."""

    query: str
    start: float
    end: float
    score: float
    modality_weights: dict[str, float]

    def to_dict(self) -> dict:
        return {
            "query": self.query,
            "start": round(float(self.start), 3),
            "end": round(float(self.end), 3),
            "score": round(float(self.score), 4),
            "modality_weights": {m: round(float(self.modality_weights[m]), 4) for m in MODALITIES},
        }


@dataclass
class Answer:
    """A query's answer: its moments (empty = not found), the best score seen and the threshold it was held to."""

    query: str
    moments: list[Moment]
    best_score: float
    threshold: float | None

    @property
    def found(self) -> bool:
        return bool(self.moments)

    def to_dict(self) -> dict:
        return {"query": self.query, "found": self.found, "best_score": round(float(self.best_score), 4),
                "threshold": None if self.threshold is None else round(float(self.threshold), 4),
                "moments": [m.to_dict() for m in self.moments]}


def nms_moments(moments: list[Moment], top_k: int, iou: float = 0.5) -> list[Moment]:
    """Keep the best-scoring moments, dropping those overlapping a kept one by more than `iou`."""
    kept: list[Moment] = []
    for m in sorted(moments, key=lambda x: -x.score):
        if all(temporal_iou((m.start, m.end), (k.start, k.end)) <= iou for k in kept):
            kept.append(m)
        if len(kept) >= top_k:
            break
    return kept
