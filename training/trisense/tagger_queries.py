"""Extra training queries from the embedded taggers' own per-second outputs (issue 11 §4, step a).

Why: with ~15 real concepts the grounder memorises concept identity instead of reading the text-aligned evidence
(docs/grounding.md, corpus v3). Asking it about the hundreds of AudioSet/COCO names that YAMNet and the detector
already name per second on the *train* clips, with the answer exactly where the tagger fires, makes no concept worth
memorising: the only way to be right on all of them is to follow the evidence.

Rule (`spans_of`): a second fires for a name when that second's `labels` hold it in the modality with confidence
>= `MIN_CONFIDENCE[modality]`; runs of firing seconds separated by at most `MERGE_GAP_S` silent seconds merge; a
name becomes a query on a clip only when exactly one merged run of >= `MIN_SPAN_S` seconds is left and it covers
at most `MAX_COVER` of the clip (a second run would be a positive that the loss calls "outside"; a whole-clip answer
teaches no moment). Negatives ask, in the same modality, for a name of the pool the clip never fires there at any
confidence, that is no class of the clip's own ground truth, and whose text is not close (cosine < `NEG_MAX_COS`)
to any name the clip does fire. Held-out concepts are never named: not their AudioSet/COCO names, not their
`LLP_RELATED` relatives, and no name sharing a word with them (`excluded`).
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from collections.abc import Callable, Iterable

import numpy as np

from models.taxonomy import LLP_AUDIOSET, LLP_COCO, LLP_RELATED, readable
from models.trisense.evidence import label_text
from models.trisense.features import ClipFeatures
from training.trisense.data import MomentRecord

MIN_CONFIDENCE = {"audio": 0.5, "visual": 0.0}  # detections are already thresholded by the detector
MERGE_GAP_S = 1
MIN_SPAN_S = 1
MAX_COVER = 0.9
NEG_MAX_COS = 0.5
MODALITIES = ("audio", "visual")


def _words(text: str) -> set[str]:
    return {w for w in re.split(r"[^a-z]+", text.lower()) if len(w) > 2}


def held_out_names(held_out: Iterable[str]) -> tuple[set[str], set[str]]:
    """(lower-cased names, words) that may not be asked about: each held-out LLP class's own names (readable, AudioSet,
    COCO) and AudioSet relatives; the words are those of its own names only (relatives are generic: "Engine")."""
    names: set[str] = set()
    words: set[str] = set()
    for c in held_out:
        own = {readable(c) if c in LLP_AUDIOSET else c.replace("_", " "), LLP_AUDIOSET.get(c, c)}
        if c in LLP_COCO:
            own.add(LLP_COCO[c])
        names |= {n.lower() for n in own} | {n.lower() for n in LLP_RELATED.get(c, ())}
        for n in own:
            words |= _words(n)
    return names, words


def excluded(name: str, held_out: Iterable[str]) -> bool:
    """Whether a tagger name would name a held-out concept (itself, a relative, or a shared word: "Car alarm")."""
    names, words = held_out_names(held_out)
    return name.lower() in names or bool(_words(name) & words)


def firing_seconds(clip: ClipFeatures, modality: str, min_confidence: float) -> dict[str, set[int]]:
    """Name -> the seconds whose labels hold it in `modality` at >= `min_confidence`."""
    out: dict[str, set[int]] = defaultdict(set)
    for lab in clip.labels:
        if lab.get("modality") == modality and float(lab.get("confidence", 0.0)) >= min_confidence:
            out[label_text(lab["label"])].add(int(float(lab["start"])))
    return out


def spans_of(seconds: Iterable[int], gap: int | None = None, min_len: int | None = None) -> list[tuple[float, float]]:
    """Merged runs `[start, end)` of firing seconds (gaps of <= `gap` seconds filled), those >= `min_len` s long."""
    gap = MERGE_GAP_S if gap is None else gap
    min_len = MIN_SPAN_S if min_len is None else min_len
    runs: list[list[int]] = []
    for t in sorted(set(seconds)):
        if runs and t - runs[-1][1] <= gap:
            runs[-1][1] = t + 1
        else:
            runs.append([t, t + 1])
    return [(float(s), float(e)) for s, e in runs if e - s >= min_len]


def build_queries(clips: dict[str, ClipFeatures], held_out: Iterable[str], audio_confidence: float | None = None
                  ) -> list[MomentRecord]:
    """One positive per (train clip, modality, name) that follows the rule, worded later by the sampler
    (`audio_confidence` replaces `MIN_CONFIDENCE["audio"]`)."""
    held_out = tuple(held_out)
    floor = {**MIN_CONFIDENCE, **({} if audio_confidence is None else {"audio": audio_confidence})}
    out = []
    for vid in sorted(clips):
        clip = clips[vid]
        for m in MODALITIES:
            for name, secs in sorted(firing_seconds(clip, m, floor[m]).items()):
                spans = spans_of(secs)
                if excluded(name, held_out) or len(spans) != 1 or spans[0][1] - spans[0][0] > MAX_COVER * clip.num_seconds:
                    continue
                out.append(MomentRecord(f"{vid}-tag-{m}-{name}", name.lower(), vid, spans, float(clip.num_seconds),
                                        extra={"modality": m, "category": name, "tagger": True}))
    return out


class TaggerQueries:
    """The pool of tagger queries over the train clips and the negatives each may draw."""

    def __init__(self, clips: dict[str, ClipFeatures], held_out: Iterable[str],
                 encode: Callable[[list[str]], np.ndarray], present: dict[tuple[str, str], set[str]] | None = None,
                 audio_confidence: float | None = None) -> None:
        """`encode`: texts -> L2-normalised vectors (the query encoder); `present`: (vid, modality) -> the clip's
        ground-truth classes (LLP names), which a negative may not name."""
        self.held_out = tuple(held_out)
        self.pool = build_queries(clips, self.held_out, audio_confidence)
        self.vocab = {m: sorted({r.extra["category"] for r in self.pool if r.extra["modality"] == m}) for m in MODALITIES}
        self.by_name: dict[tuple[str, str], list[MomentRecord]] = defaultdict(list)  # (modality, name) -> positives
        for r in self.pool:
            self.by_name[(r.extra["modality"], r.extra["category"])].append(r)
        self.absent: dict[tuple[str, str], list[str]] = {}
        truth = present or {}
        for vid, clip in clips.items():
            for m in MODALITIES:
                fired = sorted(firing_seconds(clip, m, 0.0))
                own = {n.lower() for c in truth.get((vid, m), ()) for n in _class_names(c)}
                cands = [n for n in self.vocab[m] if n not in fired and n.lower() not in own]
                if fired and cands:
                    sims = encode(cands) @ encode(fired).T
                    cands = [n for n, s in zip(cands, sims.max(axis=1), strict=True) if s < NEG_MAX_COS]
                self.absent[(vid, m)] = cands

    def draw(self, n: int, rng: random.Random, templates: dict[str, tuple[str, ...]], tag: str) -> list[MomentRecord]:
        """`n` positives drawn from the pool (name-balanced: a name first, then one of its clips), each worded with
        a random template and followed by one negative on the same clip and modality."""
        keys = sorted(self.by_name)
        out = []
        for k in range(n if self.pool else 0):
            r = rng.choice(self.by_name[rng.choice(keys)])
            m = r.extra["modality"]
            out.append(MomentRecord(f"{r.qid}-{tag}-{k}", rng.choice(templates[m]).format(x=r.query), r.vid,
                                    r.windows, r.duration, extra=r.extra))
            absent = self.absent.get((r.vid, m))
            if absent:
                name = rng.choice(absent)
                out.append(MomentRecord(f"{r.vid}-tagneg-{tag}-{k}", rng.choice(templates[m]).format(x=name.lower()),
                                        r.vid, [(0.0, 1.0)], extra={"modality": m, "category": name, "negative": True,
                                                                     "tagger": True}))
        return out


def _class_names(category: str) -> set[str]:
    """The names a ground-truth class goes by (itself, its AudioSet name and relatives, its COCO object)."""
    out = {category, category.replace("_", " "), LLP_AUDIOSET.get(category, category), *LLP_RELATED.get(category, ())}
    if category in LLP_COCO:
        out.add(LLP_COCO[category])
    return out
