"""Evaluation of grounders on a held-out split in the four TriSense modality settings."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from models.trisense.baselines import TextMatchBaseline
from models.trisense.features import MODALITIES, ClipFeatures, batch_features
from models.trisense.grounder import Grounder
from models.trisense.metrics import grounding_metrics
from models.trisense.modeling_trisense import decode_spans
from training.trisense.data import FeatureDir, MomentRecord

SETTINGS: dict[str, tuple[str, ...]] = {
    "visual+audio+speech": ("visual", "audio", "speech"),
    "visual+audio": ("visual", "audio"),
    "visual+speech": ("visual", "speech"),
    "visual": ("visual",),
}
METRIC_KEYS = ("R@0.3", "R@0.5", "R@0.7", "mIoU")

Predictor = Callable[[list[MomentRecord], FeatureDir, tuple[str, ...]], dict[str, tuple[float, float] | None]]


def _restricted(clip: ClipFeatures, keep: tuple[str, ...]) -> ClipFeatures | None:
    present = [m for m in keep if getattr(clip, m) is not None]
    return clip.restricted(present) if present else None


@torch.no_grad()
def predict_model(
    grounder: Grounder, records: list[MomentRecord], features: FeatureDir, keep: tuple[str, ...],
    qvecs: dict[str, np.ndarray], batch_size: int = 64, scores: dict[str, float] | None = None,
) -> dict[str, tuple[float, float] | None]:
    """Top-1 span per query (before abstention; `scores`, when given, receives each top span's score); clips that
    fit one model window are batched, longer ones go window by window."""
    preds: dict[str, tuple[float, float] | None] = {}
    short: list[tuple[MomentRecord, ClipFeatures]] = []
    for r in records:
        clip = _restricted(features[r.vid], keep)
        if clip is None:
            preds[r.qid] = None
        elif clip.num_seconds <= grounder.config.max_window_s:
            short.append((r, clip))
        else:
            pieces = [(float(s), clip.window(s, e)) for s, e in grounder.windows(clip.num_seconds)]
            moments = grounder.ground_windows(r.query, qvecs[r.query], pieces, top_k=1)
            preds[r.qid] = (moments[0].start, moments[0].end) if moments else None
            if scores is not None:
                scores[r.qid] = moments[0].score if moments else 0.0
    for i in range(0, len(short), batch_size):
        chunk = short[i : i + batch_size]
        feats, masks, valid = batch_features([c for _, c in chunk], grounder.dims)
        qs = np.stack([qvecs[r.query] for r, _ in chunk])
        evidence = grounder.evidence(qs, [c for _, c in chunk], valid.shape[1])
        spans = decode_spans(grounder.model(feats, masks, valid, torch.from_numpy(qs), evidence), top_k=1,
                             max_span_s=grounder.config.max_span_s)
        for (r, _), s in zip(chunk, spans, strict=True):
            preds[r.qid] = (s[0].start, s[0].end) if s else None
            if scores is not None:
                scores[r.qid] = s[0].score if s else 0.0
    return preds


def predict_text(
    baseline: TextMatchBaseline, records: list[MomentRecord], features: FeatureDir, keep: tuple[str, ...],
    scores: dict[str, float] | None = None,
) -> dict[str, tuple[float, float] | None]:
    """Top-1 span per query from transcript/label matching (None when nothing to match = a miss)."""
    preds: dict[str, tuple[float, float] | None] = {}
    for r in records:
        clip = _restricted(features[r.vid], keep)
        moments = baseline.ground(r.query, clip, top_k=1) if clip is not None else []
        preds[r.qid] = (moments[0].start, moments[0].end) if moments else None
        if scores is not None:
            scores[r.qid] = moments[0].score if moments else 0.0
    return preds


def score(records: list[MomentRecord], preds: dict[str, tuple[float, float] | None]) -> dict:
    """Overall metrics plus a breakdown by the record's query type (`extra["modality"]`) when present."""
    gt = {r.qid: r.windows for r in records}
    out = {"all": grounding_metrics(gt, preds)}
    kinds = sorted({r.extra.get("modality") for r in records if r.extra.get("modality")})
    for kind in kinds:
        sub = {r.qid: r.windows for r in records if r.extra.get("modality") == kind}
        out[kind] = grounding_metrics(sub, preds)
    return out


def evaluate(
    methods: dict[str, Predictor], records: list[MomentRecord], features: FeatureDir,
    settings: dict[str, tuple[str, ...]] | None = None,
) -> dict[str, dict[str, dict]]:
    """`results[method][setting]` = `score(...)` for every method and modality setting."""
    settings = settings or SETTINGS
    return {
        name: {setting: score(records, predict(records, features, keep)) for setting, keep in settings.items()}
        for name, predict in methods.items()
    }


def format_table(results: dict[str, dict[str, dict]], group: str = "all") -> str:
    """Markdown table: one row per method and setting, columns R@0.3/0.5/0.7 and mIoU (percent)."""
    lines = [f"| method | setting | {' | '.join(METRIC_KEYS)} | n |", "|---|---|" + "---|" * (len(METRIC_KEYS) + 1)]
    for method, per_setting in results.items():
        for setting, scores in per_setting.items():
            m = scores.get(group)
            if m is None:
                continue
            cells = " | ".join(f"{m[k]:.1f}" for k in METRIC_KEYS)
            lines.append(f"| {method} | {setting} | {cells} | {int(m['n'])} |")
    return "\n".join(lines)


def setting_average(results: dict[str, dict[str, dict]], key: str = "mIoU") -> dict[str, float]:
    """Mean of one metric over the settings, per method (the 'overall' comparison)."""
    return {method: float(np.mean([s["all"][key] for s in per.values()])) for method, per in results.items()}


def query_vectors(records: list[MomentRecord], grounder_or_encoder) -> dict[str, np.ndarray]:
    """MiniLM vector per distinct query text, encoded in one batch."""
    encoder = getattr(grounder_or_encoder, "text_encoder", grounder_or_encoder)
    texts = sorted({r.query for r in records})
    return dict(zip(texts, encoder.encode(texts), strict=True))


__all__ = ["MODALITIES", "SETTINGS", "evaluate", "format_table", "predict_model", "predict_text",
           "score"]
