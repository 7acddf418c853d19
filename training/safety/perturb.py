"""Realistic perturbations of an observation log, for PaSBench's 16-run protocol without sampling.

A deterministic reasoner gives the same answer 16 times, so the runs differ in their input instead,
the way a live log would: observations missed by perception (dropped segments, dropped sentences of
the last segment), observations written out of order (adjacent segments swapped) and different
wording (word-level paraphrase from a small synonym table). Run `seed` is reproducible.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, replace

from models.safety.logparse import Segment
from models.sentences import split_sentences

# Everyday verbs and nouns as a captioner might word them differently.
SYNONYMS: dict[str, list[str]] = {
    "walks": ["strolls", "moves"], "walked": ["strolled", "moved"],
    "picks up": ["lifts", "takes"], "picked up": ["lifted", "took"],
    "grabs": ["takes hold of", "seizes"], "grabbed": ["took hold of", "seized"],
    "grips": ["holds", "clutches"], "gripped": ["held", "clutched"],
    "places": ["puts", "sets"], "placed": ["put", "set"],
    "turns on": ["switches on", "activates"], "turned on": ["switched on", "activated"],
    "turns off": ["switches off"], "turned off": ["switched off"],
    "opens": ["unfastens"], "opened": ["unfastened"], "closes": ["shuts"], "closed": ["shut"],
    "looks at": ["glances at", "watches"], "looked at": ["glanced at", "watched"],
    "sits": ["is seated"], "sat": ["was seated"], "stands": ["gets up"], "stood": ["got up"],
    "holds": ["carries"], "held": ["carried"], "pours": ["tips"], "poured": ["tipped"],
    "begins": ["starts"], "began": ["started"], "uses": ["employs"], "used": ["employed"],
    "quickly": ["rapidly", "fast"], "slowly": ["gradually"], "approximately": ["about", "roughly"],
    "room": ["space"], "table": ["counter"], "small": ["little"], "large": ["big"],
    "child": ["kid"], "temperature": ["heat level"], "minutes": ["mins"],
}
_PATTERN = re.compile(r"\b(" + "|".join(sorted(map(re.escape, SYNONYMS), key=len, reverse=True)) + r")\b",
                      re.IGNORECASE)


@dataclass(frozen=True)
class PerturbConfig:
    """Probabilities of each perturbation (per segment or per sentence)."""

    drop_segment: float = 0.2
    swap_adjacent: float = 0.15
    drop_final_sentence: float = 0.1
    paraphrase_sentence: float = 0.2


def paraphrase(sentence: str, rng: random.Random) -> str:
    """Swap each known word or phrase for a synonym with probability 1/2."""
    def sub(m: re.Match) -> str:
        word = m.group(0)
        if rng.random() < 0.5:
            return word
        new = rng.choice(SYNONYMS[word.lower()])
        return new.capitalize() if word[0].isupper() else new
    return _PATTERN.sub(sub, sentence)


def _reword(text: str, p: float, rng: random.Random) -> str:
    return " ".join(paraphrase(s, rng) if rng.random() < p else s for s in split_sentences(text))


def perturb_log(segments: list[Segment], seed: int, cfg: PerturbConfig | None = None,
                keep: str | None = None) -> list[Segment]:
    """One perturbed copy of `segments`; the final segment is always kept (it may hold the risk).

    keep: a sentence of the final segment's behaviour that is never dropped (it may still be
    paraphrased): the observation of the risky act itself. Dropping it would turn a risky log into
    one with nothing to warn about, so a run that then stays silent would be scored wrong for being right.
    The random draws are the same with or without `keep`, so the other perturbations do not change.
    """
    if not segments:
        raise ValueError("cannot perturb an empty log")
    cfg = cfg or PerturbConfig()
    rng = random.Random(seed)
    head = [s for s in segments[:-1] if rng.random() >= cfg.drop_segment]
    for i in range(len(head) - 1):
        if rng.random() < cfg.swap_adjacent:
            head[i], head[i + 1] = head[i + 1], head[i]
    last = segments[-1]
    sentences = split_sentences(last.behavior)
    kept = [s for s in sentences if rng.random() >= cfg.drop_final_sentence or s == keep] or sentences[:1] or [last.behavior]
    last = replace(last, behavior=" ".join(kept))
    out = []
    for s in [*head, last]:
        out.append(replace(s, environment=_reword(s.environment, cfg.paraphrase_sentence, rng),
                           behavior=_reword(s.behavior, cfg.paraphrase_sentence, rng)))
    return out
