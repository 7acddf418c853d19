"""The safety retriever's TF-IDF vectors equal scikit-learn's TfidfVectorizer's, which only fits them once."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

from models.safety.tfidf import Tfidf
from tests.helpers.cli import ROOT

TEXTS = ["Never leave a hot pan unattended on the stove.", "Do not climb on a wobbly chair to reach a shelf!",
         "Keep knives away from the edge of the counter", "Wipe up spilled water at once: wet floors are slippery.",
         "Unplug the iron when you leave the room", "Children should not play near an open window."]
SEEN = ["A person climbs on a chair near the stove", "the the and of", "", "WET FLOOR: water spilled near the iron",
        "knives knives knives on the counter's edge", "Ünïcödé words, ünïcödé and a window"]


def test_vectors_equal_scikit_learns(tmp_path, monkeypatch):
    monkeypatch.setenv("FORESIGHT_CACHE", str(tmp_path))
    theirs = TfidfVectorizer(sublinear_tf=True, stop_words="english").fit(TEXTS)
    for fitted in (Tfidf(TEXTS), Tfidf(TEXTS)):  # fitted, then read back from the cache
        for texts in (TEXTS, SEEN):
            ours = fitted.transform(texts)
            assert ours.shape == (len(texts), len(theirs.vocabulary_))
            assert np.abs(ours - theirs.transform(texts).toarray()).max() < 1e-12
    assert len(list(tmp_path.rglob("tfidf-*.npy"))) == 2


def test_a_safety_monitor_starts_without_importing_scikit_learn():
    code = ("import sys; from models.safety.retrieval import RuleRetriever; from models.safety.knowledge import "
            "load_rules; r = RuleRetriever(load_rules(), embedder=None); print(len(r.rank(['a pan burns'])), "
            "'sklearn' in sys.modules)")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True)  # fits once if needed
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["5", "False"], out.stdout
