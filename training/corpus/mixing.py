"""Placing sources: package-carried pictures and sounds (cached, silence trimmed), spoken utterances, free
slots on the soundtrack, mixing a source in, and picture shots. Both the v1 and the scripted composer use
these."""

from __future__ import annotations

from functools import cache

import numpy as np

from training.corpus.sources import WORDS_PER_MINUTE, Picture
from training.corpus.truth import AudioItem, Shot
from training.media.synth import RATE, place, sample_image, sound, speak


@cache
def image(name: str) -> np.ndarray:
    return sample_image(name)


@cache
def recording(name: str) -> np.ndarray:
    return sound(name)


def audible_extent(wave: np.ndarray, rel_threshold: float = 0.02, rate: int = RATE) -> tuple[float, float]:
    """Seconds (from the recording's start) between its first and last sample above `rel_threshold` x peak."""
    peak = float(np.abs(wave).max()) if wave.size else 0.0
    if peak <= 0:
        raise ValueError("recording is silent")
    loud = np.flatnonzero(np.abs(wave) >= rel_threshold * peak)
    return loud[0] / rate, (loud[-1] + 1) / rate


def trimmed(wave: np.ndarray) -> np.ndarray:
    a, b = audible_extent(wave)
    return wave[int(a * RATE): int(np.ceil(b * RATE))]


def is_free(items: list[AudioItem], start: float, end: float, margin: float = 0.3) -> bool:
    return all(end + margin <= it.start or start >= it.end + margin for it in items)


def place_item(rng: np.random.Generator, items: list[AudioItem], length_s: float, duration: int,
                may_overlap: bool) -> float | None:
    """A start time for a sound of `length_s` that avoids the others (unless overlap is allowed), or None."""
    latest = duration - length_s - 0.2
    if latest < 0.2:
        return None
    for _ in range(30):
        start = float(rng.uniform(0.2, latest))
        if may_overlap or is_free(items, start, start + length_s):
            return round(start, 2)
    return None


def repeated(base: np.ndarray, reps: int) -> np.ndarray:
    """`base` played `reps` times back to back with 0.25-s gaps (a phone that keeps ringing)."""
    gap = np.zeros(int(0.25 * RATE), np.float32)
    return np.concatenate([p for _ in range(reps) for p in (base, gap)][:-1])


def utterance(rng: np.random.Generator, text: str, voice: str) -> np.ndarray:
    """`text` spoken by espeak-ng in `voice` at a random rate, leading/trailing silence trimmed."""
    return trimmed(speak(text, voice=voice, words_per_minute=int(rng.integers(*WORDS_PER_MINUTE))))


def mix_in(rng: np.random.Generator, track: np.ndarray, items: list[AudioItem], wave: np.ndarray,
            item: AudioItem, start: float) -> AudioItem:
    """Mix `wave` into `track` at `start`, peak-normalised with a gain of 0.5-0.9, and record its extent."""
    place(track, wave / max(float(np.abs(wave).max()), 1e-6), start, gain=float(rng.uniform(0.5, 0.9)))
    item.start, item.end = start, round(start + wave.size / RATE, 2)
    items.append(item)
    return item


def picture_weight(pic: Picture) -> float:
    """How often a picture category is drawn: LLP pictures most, then people, then the others."""
    return 0.2 if pic.llp else 0.15 if pic.person else 0.07


def make_shot(rng: np.random.Generator, pic: Picture, start: int, end: int) -> Shot:
    """A shot of `pic` from `start` to `end`: one of its images, randomly mirrored."""
    return Shot(pic.name, str(rng.choice(pic.images)), int(start), int(end), pic.llp, pic.person,
                bool(rng.random() < 0.5))
