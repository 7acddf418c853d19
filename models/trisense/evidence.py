"""Text-aligned evidence per second: how well what the taggers named, and what was said, matches the query.

The learned features (embedded audio/visual vectors) only know the concepts the grounder was trained on. The
taggers' class names (AudioSet tags, COCO objects: the clip's label events) and the transcript's per-second
MiniLM embedding live in the query's own text space, so comparing them with the query grounds any AudioSet or
COCO concept, or spoken words, including concepts no training query named. Per second and modality this gives
`EVIDENCE_DIM` numbers that the model adds to that modality's projected step (`TriSenseModel`):

* visual/audio: the best cosine between the query and the names active in that second (the clip's per-second
  `labels` and its label events), that name's tagger confidence, the best
  confidence-weighted cosine, and 1 (a name is present) — all 0 when nothing was named;
* speech: the cosine between the query and the second's speech embedding (twice, as the similarity and the
  weighted similarity), confidence 1, and 1 where words were spoken.
"""

from __future__ import annotations

import numpy as np

from models.sentences import SentenceEncoder
from models.trisense.features import MODALITIES, ClipFeatures

EVIDENCE_DIM = 4


def label_text(label: str) -> str:
    """The words a label event contributes ("Violin, fiddle", COCO "cell phone" -> "Cell phone")."""
    text = str(label).replace("_", " ").strip()
    return text[:1].upper() + text[1:]


def second_labels(start: float, tags: dict[str, float] | None, visual: dict | None,
                  text: list[dict] | None = None) -> list[dict]:
    """Every class named in one second, unthresholded: AudioSet tags as they were shown, each detected COCO
    class at its best score (a face counts as a person), and each text read on screen (its words, on the visual
    side, at the reader's confidence). Both the corpus build and the live stage use this."""
    out = [{"label": name, "modality": "audio", "start": start, "end": start + 1.0, "confidence": round(float(p), 3)}
           for name, p in (tags or {}).items()]
    best: dict[str, float] = {}
    for det in (visual or {}).get("detections", []) or []:
        best[det["label"]] = max(best.get(det["label"], 0.0), float(det["score"]))
    if (visual or {}).get("faces"):
        best["person"] = max(best.get("person", 0.0), 0.5)
    out += [{"label": label_text(name), "modality": "visual", "start": start, "end": start + 1.0,
             "confidence": round(score, 3)} for name, score in best.items()]
    out += [{"label": str(r["text"]), "modality": "visual", "start": start, "end": start + 1.0,
             "confidence": round(float(r.get("score", 1.0)), 3)} for r in text or [] if str(r.get("text", "")).strip()]
    return out


def _event_modalities(event: dict) -> tuple[str, ...]:
    modality = event.get("modality", "visual")
    if modality == "audio-visual":
        return ("audio", "visual")
    return (modality,) if modality in ("audio", "visual") else ()


def clip_evidence(query_vec: np.ndarray, clip: ClipFeatures, encoder: SentenceEncoder, num_seconds: int | None = None
                  ) -> np.ndarray:
    """`[3, T, EVIDENCE_DIM]` evidence of one clip for one query (`T` = `num_seconds`, default the clip's)."""
    T = clip.num_seconds if num_seconds is None else num_seconds
    out = np.zeros((len(MODALITIES), T, EVIDENCE_DIM), dtype=np.float32)
    q = np.asarray(query_vec, dtype=np.float32)
    events = [e for e in clip.labels + clip.events if str(e.get("label", "")).strip()]
    if events:
        sims = encoder.encode([label_text(e["label"]) for e in events]) @ q
        for event, sim in zip(events, sims, strict=True):
            conf = float(event.get("confidence", 1.0) or 0.0)
            lo, hi = max(0, int(np.floor(float(event["start"])))), min(T, int(np.ceil(float(event["end"]))))
            for m in _event_modalities(event):
                k = MODALITIES.index(m)
                for t in range(lo, hi):
                    cell = out[k, t]
                    if cell[3] == 0 or sim > cell[0]:
                        cell[0], cell[1] = sim, conf
                    cell[2] = max(cell[2], sim * conf) if cell[3] else sim * conf
                    cell[3] = 1.0
    if clip.speech is not None:
        n = min(T, clip.num_seconds)
        voiced = clip.speech_mask[:n]
        sim = clip.speech[:n] @ q
        k = MODALITIES.index("speech")
        out[k, :n, 0] = np.where(voiced, sim, 0.0)
        out[k, :n, 1] = voiced.astype(np.float32)
        out[k, :n, 2] = out[k, :n, 0]
        out[k, :n, 3] = voiced.astype(np.float32)
    return out


def evidence_arrays(query_vecs: np.ndarray, clips: list[ClipFeatures], encoder: SentenceEncoder,
                    num_seconds: int | None = None) -> np.ndarray:
    """Evidence of a batch `[B, 3, T, EVIDENCE_DIM]` float32, padded like `batch_arrays`
    (`query_vecs` `[B, 384]`, or `[384]` for one query over every clip)."""
    T = num_seconds if num_seconds is not None else max(c.num_seconds for c in clips)
    qs = np.asarray(query_vecs, dtype=np.float32)
    if qs.ndim == 1:
        qs = np.broadcast_to(qs, (len(clips), qs.shape[0]))
    return np.stack([clip_evidence(q, c, encoder, T) for q, c in zip(qs, clips, strict=True)])


def batch_evidence(query_vecs: np.ndarray, clips: list[ClipFeatures], encoder: SentenceEncoder,
                   num_seconds: int | None = None):
    """`evidence_arrays` as a torch tensor (training and the torch model)."""
    import torch

    return torch.from_numpy(evidence_arrays(query_vecs, clips, encoder, num_seconds))
