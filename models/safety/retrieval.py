"""Which known safety rule does an observation log violate? Recency-weighted retrieval over the KB.

Each segment of the log is scored against every rule by two similarities: TF-IDF cosine (exact words:
"gas water heater") and MiniLM cosine (meaning: "lifted her knee onto the roof" ~ "climb onto roofs").
Rules are embedded twice, as written and in a "behaviour form" with the prohibition words removed
("Do not eat sprouted potatoes" -> "eat sprouted potatoes"), because logs describe acts, not advice.
Every similarity is corrected by the rule's mean similarity on benign segments (the opening segments
of logs), so rules that resemble everything ("hubs") stop winning by default. Segment scores are then
averaged with weights `decay ** (segments from the end)`: risky acts sit at the end of a log.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models.safety.knowledge import PACKAGE_DATA, Rule
from models.safety.tfidf import Tfidf
from models.sentences import SentenceEncoder, split_sentences

_PROHIBITION = re.compile(
    r"\b(do not|don't|never|should not|shouldn't|must not|cannot|can not|can't|avoid|not to|"
    r"(?:is|are) not allowed to|it is forbidden to|prohibited from|not)\b\s*",
    re.IGNORECASE,
)
BACKGROUND_FILE = PACKAGE_DATA / "background.npz"


def behaviour_form(rule: Rule) -> str:
    """The rule phrased as the act it forbids, plus its trigger phrase when known."""
    return " ".join(p for p in (_PROHIBITION.sub("", rule.knowledge).strip(), rule.trigger) if p)


@dataclass
class Analysis:
    """A log scored against every rule: per-segment scores, their recency-weighted total and parts.

    parts: background-corrected similarity per kind ("tf", and with embeddings "text", "act"),
    each [segments, rules]; vectors: the segments' MiniLM vectors (None without embeddings).
    """

    segments: list[str]
    per_segment: np.ndarray
    total: np.ndarray
    parts: dict[str, np.ndarray]
    vectors: np.ndarray | None
    weights: np.ndarray


@dataclass
class Candidate:
    """A rule the log may violate: its score and the segment/sentence that triggered it."""

    rule: Rule
    score: float
    segment: int
    sentence: str


class RuleRetriever:
    """Ranks the knowledge base against a list of segment texts (oldest first)."""

    def __init__(self, rules: list[Rule], embedder: SentenceEncoder | None = None,
                 recency_decay: float = 0.5, embed_weight: float = 0.7,
                 background: str | Path | None = BACKGROUND_FILE):
        if not rules:
            raise ValueError("the knowledge base is empty")
        if not 0.0 < recency_decay <= 1.0:
            raise ValueError(f"recency_decay must be in (0, 1], got {recency_decay}")
        self.rules = rules
        self.embedder = embedder
        self.recency_decay = recency_decay
        self.embed_weight = embed_weight if embedder is not None else 0.0
        texts = [r.text() for r in rules]
        self.tfidf = Tfidf(texts)
        self.rule_tfidf = self.tfidf.transform(texts)
        if embedder is not None:
            self.rule_emb_text = embedder.encode_stored(texts)  # the same every start-up: read from disk
            self.rule_emb_act = embedder.encode_stored([behaviour_form(r) for r in rules])
        n = len(rules)
        self.bg_tfidf = np.zeros(n, dtype=np.float32)
        self.bg_text = np.zeros(n, dtype=np.float32)
        self.bg_act = np.zeros(n, dtype=np.float32)
        if background is not None and Path(background).is_file():
            self.load_background(background)

    # --- similarities -------------------------------------------------------------------------
    def _raw(self, segments: list[str]) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        tf = (self.tfidf.transform(segments) @ self.rule_tfidf.T).astype(np.float32)
        if self.embedder is None:
            return tf, None, None
        emb = self.embedder.encode_passages(segments)
        return tf, emb @ self.rule_emb_text.T, emb @ self.rule_emb_act.T

    def segment_scores(self, segments: list[str]) -> np.ndarray:
        """Background-corrected score of every (segment, rule) pair, shape [segments, rules]."""
        return self.analyse(segments).per_segment

    # --- background (hub correction) ------------------------------------------------------------
    def fit_background(self, benign_segments: list[str]) -> None:
        """Set each rule's expected similarity on segments known or assumed to be harmless."""
        if not benign_segments:
            raise ValueError("fit_background needs at least one benign segment")
        tf, text, act = self._raw(benign_segments)
        self.bg_tfidf = tf.mean(0)
        if text is not None:
            self.bg_text, self.bg_act = text.mean(0), act.mean(0)

    def save_background(self, path: str | Path = BACKGROUND_FILE) -> None:
        np.savez(path, tfidf=self.bg_tfidf, text=self.bg_text, act=self.bg_act,
                 knowledge=np.array([r.knowledge for r in self.rules]))

    def load_background(self, path: str | Path) -> None:
        """Load a saved background; it is ignored (with a ValueError) if made for another rule set."""
        data = np.load(path)
        if list(data["knowledge"]) != [r.knowledge for r in self.rules]:
            raise ValueError(f"{path} was computed for a different knowledge base")
        self.bg_tfidf, self.bg_text, self.bg_act = data["tfidf"], data["text"], data["act"]

    # --- ranking -------------------------------------------------------------------------------
    def recency_weights(self, n: int) -> np.ndarray:
        return self.recency_decay ** np.arange(n - 1, -1, -1, dtype=np.float32)

    def analyse(self, segments: list[str]) -> Analysis:
        """Every similarity of a log (oldest segment first), kept for ranking and for the risk gate."""
        segments = [s for s in segments if s.strip()]
        if not segments:
            raise ValueError("analyse needs at least one non-empty segment")
        tf, text, act = self._raw(segments)
        parts = {"tf": tf - self.bg_tfidf}
        score = (1.0 - self.embed_weight) * parts["tf"]
        vectors = None
        if text is not None:
            parts["text"], parts["act"] = text - self.bg_text, act - self.bg_act
            score = score + self.embed_weight * 0.5 * (parts["text"] + parts["act"])
            vectors = self.embedder.encode_passages(segments)
        w = self.recency_weights(len(segments))[:, None]
        total = (w * score).sum(0) / w.sum()
        return Analysis(segments, score, total, parts, vectors, w[:, 0])

    def rank(self, segments: list[str], k: int = 5) -> list[Candidate]:
        """Top-k rules for a log given as segment texts, oldest first."""
        if not any(s.strip() for s in segments):
            return []
        return self.candidates(self.analyse(segments), k)

    def candidates(self, a: Analysis, k: int = 5) -> list[Candidate]:
        """Top-k rules of an analysed log, each with the segment and sentence that triggered it."""
        out = []
        for j in np.argsort(-a.total)[:k]:
            seg = int(np.argmax(a.weights * a.per_segment[:, j]))
            out.append(Candidate(rule=self.rules[j], score=float(a.total[j]), segment=seg,
                                 sentence=self._trigger_sentence(a.segments[seg], self.rules[j])))
        return out

    def _trigger_sentence(self, segment: str, rule: Rule) -> str:
        """The sentence of the segment closest to the rule: the behaviour to point at."""
        sentences = split_sentences(segment) or [segment]
        if self.embedder is not None:
            sims = self.embedder.encode(sentences) @ self.rule_emb_act[rule.id]
        else:
            sims = self.tfidf.transform(sentences) @ self.rule_tfidf[rule.id]
        return sentences[int(np.argmax(sims))]
