"""Per-second speech embedding: MiniLM (all-MiniLM-L6-v2, 384-d) of the words spoken in that second.

The text side lives in `models.trisense.text` (the grounder embeds queries with the same model, so speech
and queries share one space); this module only adapts it to the perception stream: words arrive as ASR
output `[{"start","end","word"}]` and each second gets the words whose midpoint falls inside it.
"""

from __future__ import annotations

import numpy as np

from models.sentences import SentenceEncoder, shared_encoder
from models.trisense.text import TEXT_DIM, per_second_text, speech_features

SPEECH_DIM = TEXT_DIM


class SpeechEmbedder:
    """MiniLM on one thread (the encoder sets `torch.set_num_threads(1)` when it loads)."""

    dim = SPEECH_DIM

    def __init__(self, encoder: SentenceEncoder | None = None, context_s: float = 0.0):
        self.encoder = encoder or shared_encoder()
        self.context_s = context_s

    def embed_second(self, words: list[dict], start: float) -> tuple[np.ndarray, bool, str]:
        """Embedding, availability and text of the second [start, start + 1) from timed words (any times)."""
        shifted = [{"start": float(w["start"]) - start, "end": float(w["end"]) - start,
                    "word": w.get("word", w.get("text", ""))} for w in words]
        text = per_second_text(shifted, 1, context_s=self.context_s)[0]
        if not text.strip():
            return np.zeros(SPEECH_DIM, np.float32), False, ""
        return self.encoder.encode(text), True, text

    def embed_clip(self, transcript: list[dict], num_seconds: int) -> tuple[np.ndarray, np.ndarray]:
        """`[T, 384]` embeddings and the `[T]` voiced mask for a whole transcript (segments or words)."""
        return speech_features(transcript, num_seconds, encoder=self.encoder, context_s=self.context_s)
