"""Open-vocabulary grounding data: corpus v3's real recordings, corpus v2's spoken sentences, held-out concepts,
varied wordings and negative query-clip pairs.

* Sounds and pictures come from corpus v3 (split by source recording). Queries about the classes in
  `HELD_OUT_CONCEPTS` never reach training, neither as answers nor as negatives, so the test split measures
  grounding of concepts the model has never been asked about (it can only use the text-aligned evidence).
* Corpus v3 has no intelligible English speech (its voices are tuxpaint's non-English descriptions, transcribed
  as nothing), so speech-content queries ("someone talks about the network password") come from corpus v2, whose
  test sentences and wordings are held out of its training split; only v2's speech queries are used.
* A negative pair asks, in one modality, for a class that the clip does not have in that modality ("dog is
  heard" over a clip that only shows a dog); the model learns to abstain from them.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from pathlib import Path

from models.prefm.labels import LLP_CLASSES
from models.taxonomy import LLP_COCO, LLP_RELATED, readable
from models.trisense.features import ClipFeatures
from training.corpus.features import second_labels_of
from training.corpus.sources import SPEECH_TEMPLATES
from training.trisense.data import FeatureDir, MomentRecord, load_moment_jsonl

HELD_OUT_CONCEPTS: tuple[str, ...] = ("Violin_fiddle", "Cello", "Telephone_bell_ringing", "Car")
SPLITS = ("train", "val", "test")

# Training wordings; the corpus's own ("X is heard", "X is on screen") are what val and test ask.
TEMPLATES: dict[str, tuple[str, ...]] = {
    "audio": ("{x} is heard", "the sound of {x}", "you can hear {x}", "{x} can be heard", "a {x} sound"),
    "visual": ("{x} is on screen", "{x} is visible", "you can see {x}", "a picture of {x}", "{x} appears"),
    "speech": SPEECH_TEMPLATES["train"],
}
EVAL_TEMPLATES: dict[str, dict[str, str]] = {
    "val": {"audio": "{x} is heard", "visual": "{x} is on screen", "speech": SPEECH_TEMPLATES["train"][0]},
    "test": {"audio": "{x} is heard", "visual": "{x} is on screen", "speech": SPEECH_TEMPLATES["test"][0]},
}


def concept_text(category: str, modality: str) -> str:
    """The words for a category: LLP classes as a person writes them, speech topics as they are."""
    return category if modality == "speech" else readable(category).lower()


def synonyms(category: str, modality: str) -> list[str]:
    """Other names of a class for training wordings: its AudioSet relatives for sounds, its COCO object on screen."""
    if modality == "audio":
        return [n.lower() for n in LLP_RELATED.get(category, ())]
    return [LLP_COCO[category]] if modality == "visual" and category in LLP_COCO else []


def wording(category: str, modality: str, template: str, rng: random.Random | None = None) -> str:
    """A query about `category`; with `rng`, half the time under one of its other names."""
    names = synonyms(category, modality) if rng is not None else []
    x = rng.choice(names) if names and rng.random() < 0.5 else concept_text(category, modality)
    return template.format(x=x, topic=category)


class Features:
    """`<vid>` -> ClipFeatures over several corpora (their clip ids do not collide). Features encoded before the
    build wrote per-second `labels` get them from the corpus's own detection manifest (the same per-second tags
    and detections, `training.corpus.features.second_labels_of`), so no clip has to be encoded again."""

    def __init__(self, corpora: list[Path]) -> None:
        self.corpora = [Path(c) for c in corpora]
        self.dirs = [FeatureDir(c / "grounding" / "features") for c in self.corpora]
        self._cache: dict[str, ClipFeatures] = {}

    def __contains__(self, vid: str) -> bool:
        return any(vid in d for d in self.dirs)

    def __getitem__(self, vid: str) -> ClipFeatures:
        if vid in self._cache:
            return self._cache[vid]
        for corpus, d in zip(self.corpora, self.dirs, strict=True):
            if vid in d:
                clip = d[vid]
                manifest = corpus / "manifest" / "embedded" / f"{vid}.json"
                if not clip.labels and manifest.is_file():
                    seconds = json.loads(manifest.read_text())["seconds"][: clip.num_seconds]
                    clip.labels = second_labels_of(seconds)
                self._cache[vid] = clip
                return clip
        raise KeyError(vid)


class OpenVocabData:
    """Records of both corpora by split, and which categories each clip has per modality."""

    def __init__(self, corpus: Path, speech_corpus: Path | None = None,
                 held_out: tuple[str, ...] = HELD_OUT_CONCEPTS, speech_corpus_extra: tuple[str, ...] = ()) -> None:
        """`speech_corpus_extra`: modalities ("audio", "visual") whose queries the speech corpus also adds to training
        (free-text classes, kept in their own wordings), so that sounds are asked about next to speech."""
        self.held_out = tuple(held_out)
        self.wordings: dict[tuple[str, str], list[str]] = defaultdict(list)  # free-text class -> its queries
        self.corpus, self.speech_corpus = Path(corpus), Path(speech_corpus) if speech_corpus else None
        self.features = Features([self.corpus] + ([self.speech_corpus] if self.speech_corpus else []))
        self.records: dict[str, list[MomentRecord]] = {}
        self.present: dict[tuple[str, str], set[str]] = defaultdict(set)
        self.topics: dict[str, set[str]] = defaultdict(set)  # speech topics spoken in each split
        for split in SPLITS:
            rows = [r for r in load_moment_jsonl(self.corpus / "grounding" / f"{split}.jsonl")
                    if r.extra.get("modality") in ("audio", "visual")]
            if self.speech_corpus is not None:
                rows += [r for r in load_moment_jsonl(self.speech_corpus / "grounding" / f"{split}.jsonl")
                         if r.extra.get("modality") == "speech"
                         or (r.extra.get("modality") in speech_corpus_extra and split == "train")]
            self.records[split] = [r for r in rows if r.vid in self.features]
            for r in self.records[split]:
                self.present[(r.vid, r.extra["modality"])].add(r.extra["category"])
                if r.extra["modality"] == "speech":
                    self.topics[split].add(r.extra["category"])
                elif r.extra["category"] not in LLP_CLASSES:
                    self.wordings[(r.extra["modality"], r.extra["category"])].append(r.query)

    def positives(self, split: str, held_out: bool | None = None) -> list[MomentRecord]:
        """A split's queries; `held_out` True/False keeps only those about held-out / seen concepts."""
        rows = self.records[split]
        if held_out is None:
            return rows
        return [r for r in rows if (r.extra["category"] in self.held_out) == held_out]

    def vocabulary(self, modality: str, split: str, exclude_held_out: bool, vid: str = "") -> list[str]:
        """Classes a negative may ask for: sentence topics, the speech corpus's own free-text classes on its clips,
        LLP classes elsewhere."""
        if modality == "speech":
            return sorted(self.topics[split])
        free = sorted(c for m, c in self.wordings if m == modality)
        if free and self.speech_corpus is not None and (self.speech_corpus / "grounding" / "features" /
                                                        f"{vid}.npz").is_file():
            return free
        return [c for c in LLP_CLASSES if not (exclude_held_out and c in self.held_out)]

    def negative(self, vid: str, modality: str, split: str, rng: random.Random, template: str, tag: str,
                 exclude_held_out: bool) -> MomentRecord | None:
        """A query in `modality` for a category the clip does not have there (None if every one is present)."""
        absent = [c for c in self.vocabulary(modality, split, exclude_held_out, vid)
                  if c not in self.present[(vid, modality)]]
        if not absent:
            return None
        category = rng.choice(absent)
        free = self.wordings.get((modality, category))
        text = rng.choice(free) if free else wording(category, modality, template)
        return MomentRecord(f"{vid}-neg-{tag}", text, vid, [(0.0, 1.0)],
                            extra={"modality": modality, "category": category, "negative": True})

    def absent_queries(self, split: str, seed: int = 123) -> list[MomentRecord]:
        """Fixed absent-answer queries for evaluation: per clip and per modality it is asked about, one query for
        a class (or, for speech, a topic of the split) that the clip does not have there, in the split's wording."""
        rng = random.Random(f"{split}-{seed}")
        out = []
        for vid, modality in sorted({(r.vid, r.extra["modality"]) for r in self.records[split]}):
            neg = self.negative(vid, modality, split, rng, EVAL_TEMPLATES[split][modality], modality, False)
            if neg is not None:
                out.append(neg)
        return out

    def tagger_queries(self, audio_confidence: float | None = None):
        """The pool of extra queries from the taggers' own outputs on v3's train clips (`tagger_queries.py`),
        never naming a held-out concept."""
        from models.sentences import shared_encoder
        from training.trisense.tagger_queries import TaggerQueries

        vids = sorted({r.vid for r in self.records["train"] if r.extra["modality"] in ("audio", "visual")
                       and (self.corpus / "grounding" / "features" / f"{r.vid}.npz").is_file()})
        return TaggerQueries({v: self.features[v] for v in vids}, self.held_out, shared_encoder().encode,
                             self.present, audio_confidence)

    def sampler(self, negatives_per_query: float = 1.0, keep_wording: float = 0.4, tagger_per_epoch: int = 0,
                tagger_audio_confidence: float | None = None):
        """Each epoch: every training query about a seen concept (reworded with probability 1 - keep_wording),
        plus negative pairs on the same clips (`negatives_per_query` on average), plus `tagger_per_epoch` tagger
        queries, each with its own negative."""
        train = self.positives("train", held_out=False)
        extra = self.tagger_queries(tagger_audio_confidence) if tagger_per_epoch else None

        def draw(epoch: int, rng: random.Random) -> list[MomentRecord]:
            out = []
            for k, r in enumerate(train):
                m = r.extra["modality"]
                if rng.random() >= keep_wording and (m == "speech" or r.extra["category"] in LLP_CLASSES):
                    r = MomentRecord(r.qid, wording(r.extra["category"], m, rng.choice(TEMPLATES[m]), rng), r.vid,
                                     r.windows, r.duration, extra=r.extra)
                out.append(r)
                n = int(negatives_per_query) + (rng.random() < negatives_per_query % 1)
                for j in range(n):
                    neg = self.negative(r.vid, m, "train", rng, rng.choice(TEMPLATES[m]), f"{epoch}-{k}-{j}", True)
                    if neg is not None:
                        out.append(neg)
            if extra is not None:
                out += extra.draw(tagger_per_epoch, rng, TEMPLATES, str(epoch))
            return out

        return draw
