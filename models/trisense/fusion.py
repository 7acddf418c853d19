"""Calibrated late fusion of the learned grounder with text matching of tagger names and the transcript.

Why: on corpus v3 the learned grounder places unseen concepts about as often as text matching does, but scores
them under the threshold that seen concepts set, so it mostly abstains on them; text matching (the taggers' class
names and the transcript, embedded with the query's MiniLM) has no notion of concepts seen in training. Each
method's score is first calibrated by its own val threshold; a candidate moment of either method then scores by
how far the better-supported method clears its threshold ("max"), or by a convex mix of both supports ("mix").
The learned model (and its query connector) stays the ranking that knows the trained concepts; the text evidence
answers what the model places but under-scores. The mode, weight and the final abstention threshold are chosen on
val (`training.trisense.fusion_trials`) and stored in the checkpoint's `meta["fusion"]`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from models.trisense.decode import temporal_iou


@dataclass(frozen=True)
class FusionConfig:
    """`mode` "max": score = 0.5 + max(learned support - `learned_threshold`, text support - `text_threshold`)
    (clipped to [0, 1]); "mix": `weight` * learned support + (1 - `weight`) * text support. `threshold`: the fused
    score under which the answer is "not found". `match_iou`: how much two candidates must overlap for one
    method's score to support the other's moment."""

    mode: str
    threshold: float
    weight: float = 0.5
    learned_threshold: float = 0.0
    text_threshold: float = 0.0
    match_iou: float = 0.3

    def __post_init__(self) -> None:
        if self.mode not in ("max", "mix"):
            raise ValueError(f"fusion mode must be 'max' or 'mix', got {self.mode!r}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> FusionConfig:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})

    def score(self, learned: float, text: float) -> float:
        """The fused score of a moment with this learned and text support."""
        if self.mode == "mix":
            return self.weight * learned + (1.0 - self.weight) * text
        return min(1.0, max(0.0, 0.5 + max(learned - self.learned_threshold, text - self.text_threshold)))


def support(span: tuple[float, float], moments: list, match_iou: float) -> float:
    """The best score among `moments` overlapping `span` by at least `match_iou` (0 when none does)."""
    return max((m.score for m in moments if temporal_iou(span, (m.start, m.end)) >= match_iou), default=0.0)


def fuse(learned: list, text: list, config: FusionConfig) -> list:
    """Every candidate moment of either method rescored by `config.score` of its learned and text support, best
    first; on a tie the moment whose own method carries the fused score wins. Each keeps its span and weights."""
    out = []
    for i, m in enumerate(learned + text):
        span = (m.start, m.end)
        g, t = support(span, learned, config.match_iou), support(span, text, config.match_iou)
        own = config.score(m.score, 0.0) if i < len(learned) else config.score(0.0, m.score)
        out.append((config.score(g, t), own, type(m)(m.query, m.start, m.end, config.score(g, t),
                                                     dict(m.modality_weights))))
    return [m for _, _, m in sorted(out, key=lambda x: (-x[0], -x[1]))]
