"""Scripted composition (corpus v2): a clip follows one of `SCRIPTS`, so what comes next is partly predictable
from what came before, as in real videos (a phone rings, then someone answers; a cue sound, then a cut to a
new picture)."""

from __future__ import annotations

import numpy as np

from training.corpus.mixing import (
    make_shot,
    mix_in,
    picture_weight,
    place_item,
    recording,
    repeated,
    trimmed,
    utterance,
)
from training.corpus.sources import DISTRACTOR_SOUNDS, PICTURES, SOUNDS, VOICES, Picture, sentences_for
from training.corpus.truth import AudioItem, Shot
from training.media.synth import RATE

NOISE_LEVEL = 0.003
SCRIPTS = ("phone_call", "alarm_answer", "conversation", "showcase")
CUE_SOUND = "camera-shutter"  # the click that announces a cut in the showcase script
TURN_PAUSE_S = (0.7, 0.9)  # pause between conversation turns: short and regular
REPLY_DELAY_S = (0.3, 0.6)  # from a cut to a person until they start speaking


def pick_picture(rng: np.random.Generator, used: set[str], person: bool, labelled: bool | None = None) -> Picture:
    """A picture category not yet in the clip, weighted as in v1; `labelled` restricts to (non-)LLP pictures."""
    pool = [p for p in PICTURES if p.person == person and p.name not in used
            and (labelled is None or bool(p.llp) == labelled)]
    weights = np.array([picture_weight(p) for p in pool])
    pic = pool[int(rng.choice(len(pool), p=weights / weights.sum()))]
    used.add(pic.name)
    return pic


class ScriptBuilder:
    """Places sources at scripted times and collects the cuts; every placement keeps the v1 invariants
    (sources inside the clip, shots of >= 3 s on whole seconds, no picture category twice)."""

    def __init__(self, rng: np.random.Generator, split: str, duration: int) -> None:
        self.rng, self.split, self.duration = rng, split, duration
        self.track = (NOISE_LEVEL * rng.standard_normal(duration * RATE)).astype(np.float32)
        self.items: list[AudioItem] = []
        self.cuts: list[tuple[Picture, int]] = []
        self.used: set[str] = set()
        self.spoken: set[str] = set()

    def fits(self, start: float, length: float) -> bool:
        return start >= 0.1 and start + length <= self.duration - 0.2

    def add(self, wave: np.ndarray, item: AudioItem, start: float) -> AudioItem | None:
        """Mix `wave` in at `start` (gain 0.5-0.9, as in v1) if it fits in the clip."""
        start = round(start, 2)
        if not self.fits(start, wave.size / RATE):
            return None
        return mix_in(self.rng, self.track, self.items, wave, item, start)

    def ring(self, start: float, reps: int) -> AudioItem:
        """A phone ringing `reps` times back to back (as v1 repeats it)."""
        snd = next(s for s in SOUNDS if s.name == "phone")
        wave = repeated(trimmed(recording(str(self.rng.choice(snd.files)))), reps)
        item = self.add(wave, AudioItem("sound", snd.name, 0, 0, snd.llp), start)
        assert item is not None, "scripts start the phone early enough for it to fit"
        return item

    def alarm(self, start: float, seconds: float) -> AudioItem:
        snd = next(s for s in SOUNDS if s.name == "alarm")
        wave = trimmed(recording(str(self.rng.choice(snd.files))))[: int(seconds * RATE)]
        item = self.add(wave, AudioItem("sound", snd.name, 0, 0, snd.llp), start)
        assert item is not None, "scripts start the alarm early enough for it to fit"
        return item

    def say(self, start: float, voice: str) -> AudioItem | None:
        """The first unspoken sentence of the split's bank (random order) that fits from `start`, or None."""
        bank = sentences_for(self.split)
        for k in self.rng.permutation(len(bank)):
            text, topic = bank[int(k)]
            if text in self.spoken:
                continue
            wave = utterance(self.rng, text, voice)
            if self.fits(start, wave.size / RATE):
                self.spoken.add(text)
                return self.add(wave, AudioItem("speech", "speech", 0, 0, "Speech", text, topic, voice), start)
            if self.duration - 0.2 - start < 1.5:  # no sentence is that short
                return None
        return None

    def cue(self, cut: int) -> None:
        """The cue click, ending just before a cut."""
        wave = trimmed(recording(CUE_SOUND))
        self.add(wave, AudioItem("distractor", CUE_SOUND, 0, 0, None), cut - wave.size / RATE
                 - float(self.rng.uniform(0.1, 0.3)))

    def cut(self, pic: Picture, at: int) -> None:
        assert not self.cuts or at - self.cuts[-1][1] >= 3, "shots last at least 3 s"
        self.cuts.append((pic, at))

    def talk(self, start: float, voices: list[str], turns: int) -> float:
        """Up to `turns` utterances, voices taking turns, separated by short regular pauses; the last end."""
        end = start
        for k in range(turns):
            item = self.say(start, voices[k % len(voices)])
            if item is None:
                break
            end = item.end
            start = item.end + float(self.rng.uniform(*TURN_PAUSE_S))
        return end

    def close(self, after: float) -> None:
        """Cut away from the last shot once its action is over, if a >= 3-s shot still fits."""
        at = int(np.ceil(after + 0.3))
        if self.duration - at >= 3 and at - self.cuts[-1][1] >= 3:
            self.cut(pick_picture(self.rng, self.used, person=False), at)

    def shots(self) -> list[Shot]:
        bounds = [at for _, at in self.cuts] + [self.duration]
        return [make_shot(self.rng, pic, a, b) for (pic, a), b in zip(self.cuts, bounds[1:], strict=True)]


def _answer(b: ScriptBuilder, sound_end: float) -> None:
    """After a phone or alarm: cut to a person who starts speaking, possibly twice; then maybe cut away."""
    at = int(np.ceil(sound_end + b.rng.uniform(0.2, 0.8)))
    b.cut(pick_picture(b.rng, b.used, person=True), at)
    voice = str(b.rng.choice(VOICES))
    end = b.talk(at + float(b.rng.uniform(*REPLY_DELAY_S)), [voice], int(b.rng.integers(1, 3)))
    b.close(end)


def _script_phone_call(b: ScriptBuilder) -> None:
    """A picture; the phone rings 2-3 times; cut to a person who answers."""
    b.cut(pick_picture(b.rng, b.used, person=False), 0)
    ring = b.ring(float(b.rng.uniform(0.3, 1.2)), int(b.rng.integers(2, 4)))
    _answer(b, ring.end)


def _script_alarm_answer(b: ScriptBuilder) -> None:
    """A picture; an alarm keeps sounding for 3-5.5 s; cut to a person who speaks ("turn that off")."""
    b.cut(pick_picture(b.rng, b.used, person=False), 0)
    alarm = b.alarm(float(b.rng.uniform(0.3, 1.2)), float(b.rng.uniform(3.0, 5.5)))
    _answer(b, alarm.end)


def _script_conversation(b: ScriptBuilder) -> None:
    """Maybe an establishing shot; then a person on screen while two voices take turns."""
    at = 0
    if b.rng.random() < 0.5:
        b.cut(pick_picture(b.rng, b.used, person=False), 0)
        at = int(b.rng.integers(3, 5))
    b.cut(pick_picture(b.rng, b.used, person=True), at)
    voices = [str(v) for v in b.rng.choice(VOICES, size=2, replace=False)]
    b.close(b.talk(at + float(b.rng.uniform(*REPLY_DELAY_S)), voices, 3))


def _script_showcase(b: ScriptBuilder) -> None:
    """An unlabelled picture, then the cat and the motorcycle, each announced by the cue click and held
    4-6 s; a closing shot (a person who speaks, half the time) when there is room."""
    b.cut(pick_picture(b.rng, b.used, person=False, labelled=False), 0)
    at = int(b.rng.integers(3, 5))
    for _ in range(2):
        if b.duration - at < 4:
            break
        b.cue(at)
        b.cut(pick_picture(b.rng, b.used, person=False, labelled=True), at)
        at += min(int(b.rng.integers(4, 7)), b.duration - at)
    if b.duration - at >= 3:
        person = b.rng.random() < 0.5
        b.cue(at)
        b.cut(pick_picture(b.rng, b.used, person=bool(person), labelled=None if person else False), at)
        if person:
            b.talk(at + float(b.rng.uniform(*REPLY_DELAY_S)), [str(b.rng.choice(VOICES))], 1)


_SCRIPT_FNS = {"phone_call": _script_phone_call, "alarm_answer": _script_alarm_answer,
               "conversation": _script_conversation, "showcase": _script_showcase}


def compose_scripted(rng: np.random.Generator, split: str, duration: int, script: str
                     ) -> tuple[np.ndarray, list[AudioItem], list[Shot]]:
    """Soundtrack, audio items and shots of one scripted clip; at most one random distractor (may overlap)."""
    b = ScriptBuilder(rng, split, duration)
    _SCRIPT_FNS[script](b)
    if rng.random() < 0.3:
        name = str(rng.choice([d for d in DISTRACTOR_SOUNDS if d != CUE_SOUND]))
        wave = trimmed(recording(name))
        start = place_item(rng, b.items, wave.size / RATE, duration, may_overlap=True)
        if start is not None:
            b.add(wave, AudioItem("distractor", name, 0, 0, None), start)
    b.items.sort(key=lambda it: it.start)
    return b.track, b.items, b.shots()
