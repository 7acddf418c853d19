"""Questions about a stream, their reference answers, and the link from a question to what it names.

The training set stands in for the paper's maths problems with verifiable answers: synthetic stream logs
(events with Foresight's LLP labels, transcript lines) and seven kinds of question a user asks of a stored
stream ("how many times did the phone ring?", "when was the first alarm?", "what was said after the
alarm?"). Reference answers are computed here from the log, independently of any program the policy
writes; the outcome reward compares the agent's final answer to them.

`link` binds the question's nouns to the stream: the event label it names (`LABEL`) and the word it asks
about (`WORD`). The policy sees the remaining words (the intent) and must work out which program to write.
"""

from __future__ import annotations

import functools
import random
import re
from dataclasses import dataclass

from training.methods.zerotir.streamlog import StreamLog, from_rows

# Event labels (LLP's names, as Foresight stores them) and how people refer to them in questions.
ALIASES: dict[str, tuple[str, ...]] = {
    "Telephone_bell_ringing": ("phone", "telephone", "ringing phone", "ring", "rang"),
    "Fire_alarm": ("alarm", "fire alarm", "smoke alarm"),
    "Dog": ("dog", "barking dog", "bark"),
    "Cat": ("cat", "meowing cat", "meow"),
    "Baby_cry_infant_cry": ("baby", "crying baby", "cry"),
    "Car": ("car", "passing car"),
    "Clapping": ("clapping", "applause", "clap"),
    "Vacuum_cleaner": ("vacuum", "vacuum cleaner", "hoover"),
    "Blender": ("blender",),
    "Cheering": ("cheering", "crowd"),
    "Helicopter": ("helicopter",),
    "Motorcycle": ("motorcycle", "motorbike"),
    "Chainsaw": ("chainsaw",),
    "Lawn_mower": ("lawn mower", "mower"),
}
NOUNS = {label: tuple(a for a in names if a not in ("ring", "rang", "bark", "meow", "cry", "clap"))
         for label, names in ALIASES.items()}
TEMPLATES: dict[str, tuple[str, ...]] = {
    "count": ("how many times did the {x} occur?", "how many {x} events were there?",
              "how often was there a {x}?", "count the {x} events."),
    "first_start": ("when was the first {x}?", "at what time did the {x} first start?",
                    "when did the {x} begin for the first time?"),
    "last_end": ("when did the last {x} end?", "at what time did the final {x} stop?",
                 "when was the {x} over for the last time?"),
    "total": ("how long did the {x} last in total?", "for how many seconds was there {x} altogether?",
              "what was the total duration of the {x}?"),
    "said_after": ("what was said after the first {x}?", "what did someone say after the {x} started?",
                   "what were the first words after the {x}?"),
    "said_before": ("what was said before the first {x}?", "what did someone say just before the {x}?",
                    "what were the last words before the {x}?"),
    "said_count": ("how many times did someone say {w}?", "how often was {w} mentioned?",
                   "how many lines mention {w}?", "how many times was the word {w} said?"),
}
KINDS: tuple[str, ...] = tuple(TEMPLATES)
WORDS = ("door", "kitchen", "package", "hello", "help", "keys", "dinner", "meeting", "window", "coffee",
         "garden", "battery")
PHRASES = ("did you see the {w}?", "I left the {w} in the hall.", "can you check the {w}?",
           "thanks for the {w}.", "where is the {w}?", "the {w} is ready.", "we need a new {w}.",
           "okay, see you later.", "that sounds fine to me.", "let me think about it.")
INTENT_VOCAB: tuple[str, ...] = tuple(sorted({w for ts in TEMPLATES.values() for t in ts
                                              for w in re.findall(r"[a-z]+", t.replace("{x}", "").replace("{w}", ""))}))


def tokens(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def stem(word: str) -> str:
    """A crude suffix strip, enough to meet "ringing" with "ring" and "alarms" with "alarm"."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


INTENT_STEMS = frozenset(stem(w) for w in INTENT_VOCAB)


@functools.lru_cache(maxsize=4096)
def label_stems(label: str) -> frozenset[str]:
    """Stems a question may use for `label`: its own words and its aliases, minus question words."""
    names = [label.replace("_", " "), *ALIASES.get(label, ())]
    return frozenset(stem(w) for name in names for w in tokens(name)) - INTENT_STEMS


@dataclass(frozen=True)
class Link:
    """What a question names in a stream, and the words left for the policy to read."""

    label: str
    word: str
    intent: tuple[str, ...]


def link(question: str, labels: list[str]) -> Link:
    """Bind the question's nouns: the stored label sharing most word stems with it (the first on a tie),
    and the quoted word, or the word after say/mention, or the first unclaimed word."""
    words = tokens(question)
    quoted = re.findall(r"[\"'‘“]([^\"'’”]+)[\"'’”]", question)
    scores = [(sum(stem(w) in label_stems(lab) for w in words), -i, lab) for i, lab in enumerate(labels)]
    best = max(scores, default=(0, 0, ""))
    label = best[2] if best[0] > 0 else ""
    claimed = {w for w in words if label and stem(w) in label_stems(label)}
    word = quoted[0].strip().lower() if quoted else ""
    if not word:
        for key in ("say", "said", "mention", "word"):
            if key in words[:-1]:
                after = [w for w in words[words.index(key) + 1:] if w not in INTENT_VOCAB and w not in claimed]
                word = after[0] if after else ""
                break
    if not word:
        free = [w for w in words if w not in INTENT_VOCAB and w not in claimed]
        word = free[0] if free else ""
    claimed |= set(tokens(word))
    return Link(label, word, tuple(w for w in words if w not in claimed and w in INTENT_VOCAB))


def reference_answer(kind: str, log: StreamLog, label: str, word: str) -> str:
    """The correct answer, computed directly from the log."""
    hits = [e for e in log.events if e["label"] == label]
    if kind == "count":
        return str(len(hits))
    if kind == "first_start":
        return str(min(e["start"] for e in hits))
    if kind == "last_end":
        return str(max(e["end"] for e in hits))
    if kind == "total":
        return str(round(sum(e["end"] - e["start"] for e in hits), 1))
    if kind == "said_count":
        return str(sum(re.search(rf"\b{re.escape(word)}\b", t["text"], re.I) is not None for t in log.transcript))
    t0 = min(e["start"] for e in hits)
    if kind == "said_after":
        later = [t for t in log.transcript if t["start"] >= t0]
        return min(later, key=lambda t: t["start"])["text"] if later else "nothing"
    if kind == "said_before":
        earlier = [t for t in log.transcript if t["start"] < t0]
        return max(earlier, key=lambda t: t["start"])["text"] if earlier else "nothing"
    raise ValueError(f"unknown question kind {kind!r}")


def _normal(text: str) -> str:
    return " ".join(tokens(text))


def is_correct(answer: str | None, reference: str) -> bool:
    """Numbers match within 0.05 (times are kept to 0.1 s); text matches up to case and punctuation."""
    if answer is None:
        return False
    try:
        return abs(float(answer.strip()) - float(reference)) <= 0.05 + 1e-9
    except ValueError:
        return _normal(answer) == _normal(reference) and bool(_normal(reference))


@dataclass(frozen=True)
class Episode:
    """One question about one stream, with its reference answer."""

    log_id: int
    log: StreamLog
    kind: str
    question: str
    label: str
    word: str
    answer: str


def make_log(rng: random.Random, name: str) -> StreamLog:
    """A stream of a few minutes: 3-6 sound classes with 1-8 occurrences each, and 4-14 spoken lines."""
    events = []
    for label in rng.sample(sorted(ALIASES), rng.randint(3, 6)):
        t = rng.uniform(0, 150)
        for _ in range(rng.randint(1, 8)):
            length = round(rng.uniform(1, 8))
            events.append({"label": label, "modality": "audio", "start": float(round(t)),
                           "end": float(round(t) + length), "confidence": round(rng.uniform(0.5, 1), 2)})
            t += length + rng.uniform(2, 40)
    lines, t = [], rng.uniform(0, 20)
    for _ in range(rng.randint(4, 14)):
        text = " ".join(p.format(w=rng.choice(WORDS)) for p in rng.sample(PHRASES, rng.randint(1, 2)))
        length = round(rng.uniform(1.5, 5), 1)
        lines.append({"start": round(t, 1), "end": round(t + length, 1), "text": text[0].upper() + text[1:]})
        t += length + rng.uniform(2, 30)
    return from_rows(name, events, lines)


def make_episodes(n: int, seed: int, per_log: int = 2) -> list[Episode]:
    """`n` questions, `per_log` to a stream; question kinds uniform, phrasings and aliases sampled."""
    rng = random.Random(seed)
    episodes: list[Episode] = []
    while len(episodes) < n:
        log_id = len(episodes) // per_log
        log = make_log(rng, f"synthetic-{seed}-{log_id}")
        for _ in range(per_log):
            kind = rng.choice(KINDS)
            label = rng.choice(log.labels)
            spoken = sorted({w for t in log.transcript for w in tokens(t["text"]) if w in WORDS})
            word = rng.choice(spoken or list(WORDS))
            question = rng.choice(TEMPLATES[kind]).format(x=rng.choice(NOUNS[label]), w=word)
            episodes.append(Episode(log_id, log, kind, question, label, word,
                                    reference_answer(kind, log, label, word)))
    return episodes[:n]
