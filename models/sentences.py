"""Sentence vectors for the whole app: the process's MiniLM (`models/minilm.py`) behind one bounded cache.

The grounder embeds queries and the words spoken each second, the safety monitor the sentences of its
observation log and its rules; both ask `shared_encoder()`. The cache keeps the most recently used vectors
(`cache_size`): a camera's log says new things for days, and every vector kept forever was a slow leak. Fixed
texts such as the safety rules are kept on disk too (`encode_stored`), so a start-up does not embed them again.
"""

from __future__ import annotations

import copy
import functools
import re
import threading
from collections import OrderedDict
from concurrent.futures import Future
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


class SentenceEncoder:
    """Unit sentence vectors (float32), the `cache_size` most recently used kept. The model loads on a thread of
    its own from construction, so a stage that builds one goes on at once and only its first new sentence
    waits; vectors already on disk (`encode_stored`) never wait."""

    def __init__(self, model_dir: str | Path | None = None, cache_size: int = 4096, batch_size: int = 64):
        self.model_dir = Path(model_dir or minilm_dir())
        self.batch_size = batch_size
        self.cache_size = cache_size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()  # the cache: threads of a stage host share an encoder
        self._model: Future = Future()  # shared with `for_stream` copies
        # not a daemon: a process that ends while the model loads waits for it (ONNX Runtime's own threads, torn
        # down mid-load at exit, abort the process: "terminate called without an active exception")
        threading.Thread(target=self._load, name="minilm-load").start()
        dim = pooled_dimension(self.model_dir)
        self.dim = dim if dim is not None else self.model.dim  # else the size is known once loaded

    def _load(self) -> None:
        from models.minilm import load_sentence_model

        try:
            self._model.set_result(load_sentence_model(self.model_dir))
        except BaseException as exc:  # raised to whoever asks for the model
            self._model.set_exception(exc)

    @property
    def model(self):
        """The sentence model (`models/minilm.py`), once loaded (an error loading it is raised here)."""
        return self._model.result()

    def for_stream(self) -> SentenceEncoder:
        """This encoder with a cache of its own (a copy of what this one holds now): a stream whose vectors must
        not depend on what other streams asked for (a vector computed in another batch may differ in its last
        bits)."""
        twin = copy.copy(self)
        twin._cache, twin._lock = OrderedDict(self._cache), threading.Lock()
        return twin

    def vectors(self, texts: list[str]) -> np.ndarray:
        """One unit vector per text, every text embedded as it is (`[N, dim]`)."""
        with self._lock:
            found = {t: self._cache[t] for t in texts if t in self._cache}
            for t in found:
                self._cache.move_to_end(t)
        todo = sorted(set(texts) - set(found))
        if todo:
            new = self.model.encode(todo, batch_size=self.batch_size).astype(np.float32)
            found.update(zip(todo, new, strict=True))
            self._keep(zip(todo, new, strict=True))
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([found[t] for t in texts])

    def _keep(self, pairs) -> None:
        with self._lock:
            for text, vec in pairs:
                self._cache[text] = vec
                self._cache.move_to_end(text)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)

    def encode(self, texts: list[str] | str) -> np.ndarray:
        """Embed one text (`[dim]`) or a list (`[N, dim]`); a blank text maps to zeros (nothing said)."""
        single = isinstance(texts, str)
        items = [texts] if single else list(texts)
        out = np.zeros((len(items), self.dim), dtype=np.float32)
        said = [i for i, t in enumerate(items) if t.strip()]
        if said:
            out[said] = self.vectors([items[i] for i in said])
        return out[0] if single else out

    def encode_stored(self, texts: list[str]) -> np.ndarray:
        """`vectors(texts)`, kept on disk for the next process (`models/cache.py`): for fixed texts such as the
        knowledge base's rules, which every start-up would otherwise embed again."""
        from models.cache import content_key, stored_array

        weights = sorted((p.name, p.stat().st_size) for p in self.model_dir.rglob("*") if p.is_file())
        key = content_key(str(self.model_dir.resolve()), repr(weights), *texts)
        vecs = stored_array("minilm", key, lambda: self.vectors(texts))
        if vecs.shape != (len(texts), self.dim):  # not what this model makes of these texts: recompute
            return self.vectors(texts)
        return vecs

    def encode_passages(self, passages: list[str]) -> np.ndarray:
        """One unit vector per passage: the mean of its sentence vectors, renormalised (a log that grows
        re-embeds only its new sentences)."""
        split = [split_sentences(p) or [p or " "] for p in passages]
        flat = self.vectors([s for ss in split for s in ss])
        out = np.zeros((len(passages), self.dim), dtype=np.float32)
        start = 0
        for i, ss in enumerate(split):
            v = flat[start:start + len(ss)].mean(axis=0)
            start += len(ss)
            out[i] = v / max(float(np.linalg.norm(v)), 1e-9)
        return out


@functools.lru_cache(maxsize=1)
def shared_encoder() -> SentenceEncoder:
    """The process's one encoder (and cache) for the default MiniLM."""
    return SentenceEncoder()
