"""TF-IDF vectors of the safety rules and of what is seen, without importing scikit-learn at run time.

scikit-learn's `TfidfVectorizer(sublinear_tf=True, stop_words="english")` learns the vocabulary and the idf
weights from the knowledge base. Importing scikit-learn costs about 1.8 s of one core (it pulls in scipy.stats)
in every process that starts a safety monitor, for a fit whose result never changes. So the fit runs once per
machine and rule set (`models.cache.stored_array`, keyed by the rule texts) and every later process only turns
texts into vectors here, with the vectorizer's own rules: lower case, tokens of two or more word characters,
words outside the vocabulary (stop words included) dropped, 1 + log(count), times idf, unit length. The
vectors equal scikit-learn's to float rounding (`tests/test_safety_tfidf.py`).
"""

from __future__ import annotations

import re

import numpy as np

from models.cache import content_key, stored_array

TOKEN = re.compile(r"(?u)\b\w\w+\b")  # the vectorizer's default token_pattern


def _fit(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.feature_extraction.text import TfidfVectorizer

    vectorizer = TfidfVectorizer(sublinear_tf=True, stop_words="english").fit(texts)
    return vectorizer.get_feature_names_out().astype(str), vectorizer.idf_.astype(np.float64)


class Tfidf:
    """`transform(texts) -> [len(texts), vocabulary]` dense unit rows, fitted on `texts` (the knowledge base)."""

    def __init__(self, texts: list[str]):
        key = content_key(*texts)
        fitted: list = []

        def fit(part: int) -> np.ndarray:
            if not fitted:
                fitted.extend(_fit(texts))
            return fitted[part]

        vocabulary = stored_array("tfidf-vocabulary", key, lambda: fit(0))
        self.idf = stored_array("tfidf-idf", key, lambda: fit(1))
        self.index = {word: i for i, word in enumerate(vocabulary.tolist())}

    def transform(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), len(self.index)), np.float64)
        for row, text in enumerate(texts):
            counts: dict[int, int] = {}
            for token in TOKEN.findall(text.lower()):
                i = self.index.get(token)
                if i is not None:
                    counts[i] = counts.get(i, 0) + 1
            if counts:
                cols = np.fromiter(counts, np.int64, len(counts))
                out[row, cols] = (1.0 + np.log(np.fromiter(counts.values(), np.float64, len(counts)))) * self.idf[cols]
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return np.divide(out, norms, out=out, where=norms > 0)
