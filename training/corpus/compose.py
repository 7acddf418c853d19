"""Compose the corpus clips and their ground truth, deterministically from one seed.

A clip is 12-16 s of 640x360 video: 2-4 picture shots (cuts on whole seconds, slow Ken Burns zoom) over a
soundtrack of quiet noise plus 0-2 espeak-ng utterances, maybe a phone ringing, maybe an alarm, and 0-2 short
unlabelled interface sounds. Because we placed every source, the truth is exact:

- audio labels: second t ([t, t+1)) has a class when that class's audible extent (leading/trailing silence of
  the recording trimmed) overlaps it by at least `MIN_OVERLAP_S`;
- visual labels: the class of the picture on screen; visual Speech when a person picture is on screen during
  a second labelled audio Speech (LLP annotates a visible speaker as visual Speech);
- grounding queries: one per utterance (about its topic), per labelled sound and per shot, with the span of
  that source; a category appears at most once per clip so every query has one answer.

Splits are drawn by clip before composing (70/10/20 % train/val/test); test clips speak only held-out
sentences and their queries use only held-out wordings (`sources.py`).

Scripted clips (`scripts` > 0, corpus v2): a share of the clips follows one of `SCRIPTS` instead of placing
sources at independent random times, so what comes next is partly predictable from what came before, as in
real videos (a phone rings, then someone answers; a cue sound, then a cut to a new picture). The labelling
rules are the same for both kinds; with `scripts=0` (the default) every clip is composed exactly as in v1.
"""

from __future__ import annotations

import csv
import json
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path

import numpy as np

from models.prefm.labels import LLP_CLASSES, LLP_INDEX
from training.corpus.sources import (
    DISTRACTOR_SOUNDS,
    PICTURES,
    SOUNDS,
    SPEECH_TEMPLATES,
    VOICES,
    WORDS_PER_MINUTE,
    Picture,
    sentences_for,
    wording_split,
)
from training.media.synth import RATE, ClipSpec, ken_burns, place, sample_image, sound, speak, write_clip

WIDTH, HEIGHT = 640, 360
MIN_OVERLAP_S = 0.3
SPLIT_FRACTIONS = {"train": 0.7, "val": 0.1, "test": 0.2}
NOISE_LEVEL = 0.003
SCRIPTS = ("phone_call", "alarm_answer", "conversation", "showcase")
CUE_SOUND = "camera-shutter"  # the click that announces a cut in the showcase script
TURN_PAUSE_S = (0.7, 0.9)  # pause between conversation turns: short and regular
REPLY_DELAY_S = (0.3, 0.6)  # from a cut to a person until they start speaking


@dataclass
class AudioItem:
    """One placed sound: its audible extent in clip seconds, LLP class (None = distractor) and, for speech, text."""

    kind: str  # "speech" | "sound" | "distractor"
    name: str
    start: float
    end: float
    llp: str | None
    text: str = ""
    topic: str = ""
    voice: str = ""


@dataclass
class Shot:
    """A picture on screen over whole seconds [start, end)."""

    category: str
    image: str
    start: int
    end: int
    llp: str | None
    person: bool
    flip: bool = False


@dataclass
class ClipTruth:
    """Everything that was composed into one clip."""

    clip_id: str
    split: str
    duration: int
    fps: int
    audio: list[AudioItem] = field(default_factory=list)
    shots: list[Shot] = field(default_factory=list)
    queries: list[dict] = field(default_factory=list)

    script: str = ""  # "" for a v1 (random) clip, else one of SCRIPTS

    def to_dict(self) -> dict:
        d = asdict(self)
        if not self.script:  # v1 truth files stay byte-for-byte what they were
            del d["script"]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> ClipTruth:
        return cls(d["clip_id"], d["split"], int(d["duration"]), int(d["fps"]),
                   [AudioItem(**a) for a in d["audio"]], [Shot(**s) for s in d["shots"]], list(d["queries"]),
                   str(d.get("script", "")))


# --------------------------------------------------------------------------------------------------
# Media
# --------------------------------------------------------------------------------------------------


@cache
def _image(name: str) -> np.ndarray:
    return sample_image(name)


@cache
def _sound(name: str) -> np.ndarray:
    return sound(name)


def audible_extent(wave: np.ndarray, rel_threshold: float = 0.02, rate: int = RATE) -> tuple[float, float]:
    """Seconds (from the recording's start) between its first and last sample above `rel_threshold` x peak."""
    peak = float(np.abs(wave).max()) if wave.size else 0.0
    if peak <= 0:
        raise ValueError("recording is silent")
    loud = np.flatnonzero(np.abs(wave) >= rel_threshold * peak)
    return loud[0] / rate, (loud[-1] + 1) / rate


def _trimmed(wave: np.ndarray) -> np.ndarray:
    a, b = audible_extent(wave)
    return wave[int(a * RATE): int(np.ceil(b * RATE))]


# --------------------------------------------------------------------------------------------------
# Composition
# --------------------------------------------------------------------------------------------------


def assign_splits(n: int, seed: int) -> list[str]:
    """Split of each clip index: a seeded permutation cut 70/10/20 (at least one test and one train clip)."""
    if n < 2:
        raise ValueError("a corpus needs at least 2 clips (one train, one test)")
    order = np.random.default_rng([seed, 1]).permutation(n)
    n_test = max(1, round(SPLIT_FRACTIONS["test"] * n))
    n_val = round(SPLIT_FRACTIONS["val"] * n) if n - n_test > 2 else 0
    splits = ["train"] * n
    for k, i in enumerate(order):
        splits[i] = "test" if k < n_test else "val" if k < n_test + n_val else "train"
    return splits


def _free(items: list[AudioItem], start: float, end: float, margin: float = 0.3) -> bool:
    return all(end + margin <= it.start or start >= it.end + margin for it in items)


def _place_item(rng: np.random.Generator, items: list[AudioItem], length_s: float, duration: int,
                may_overlap: bool) -> float | None:
    """A start time for a sound of `length_s` that avoids the others (unless overlap is allowed), or None."""
    latest = duration - length_s - 0.2
    if latest < 0.2:
        return None
    for _ in range(30):
        start = float(rng.uniform(0.2, latest))
        if may_overlap or _free(items, start, start + length_s):
            return round(start, 2)
    return None


def _repeated(base: np.ndarray, reps: int) -> np.ndarray:
    """`base` played `reps` times back to back with 0.25-s gaps (a phone that keeps ringing)."""
    gap = np.zeros(int(0.25 * RATE), np.float32)
    return np.concatenate([p for _ in range(reps) for p in (base, gap)][:-1])


def _utterance(rng: np.random.Generator, text: str, voice: str) -> np.ndarray:
    """`text` spoken by espeak-ng in `voice` at a random rate, leading/trailing silence trimmed."""
    return _trimmed(speak(text, voice=voice, words_per_minute=int(rng.integers(*WORDS_PER_MINUTE))))


def _mix_in(rng: np.random.Generator, track: np.ndarray, items: list[AudioItem], wave: np.ndarray,
            item: AudioItem, start: float) -> AudioItem:
    """Mix `wave` into `track` at `start`, peak-normalised with a gain of 0.5-0.9, and record its extent."""
    place(track, wave / max(float(np.abs(wave).max()), 1e-6), start, gain=float(rng.uniform(0.5, 0.9)))
    item.start, item.end = start, round(start + wave.size / RATE, 2)
    items.append(item)
    return item


def _compose_audio(rng: np.random.Generator, split: str, duration: int) -> tuple[np.ndarray, list[AudioItem]]:
    track = (NOISE_LEVEL * rng.standard_normal(duration * RATE)).astype(np.float32)
    items: list[AudioItem] = []
    pending: list[tuple[np.ndarray, AudioItem]] = []
    for snd in SOUNDS:
        if rng.random() < 0.5:
            base = _trimmed(_sound(str(rng.choice(snd.files))))
            wave = _repeated(base, int(rng.integers(snd.repeat[0], snd.repeat[1] + 1)))
            wave = wave[: int(rng.uniform(2.0, snd.max_s) * RATE)] if wave.size / RATE > snd.max_s else wave
            pending.append((wave, AudioItem("sound", snd.name, 0, 0, snd.llp)))
    n_speech = int(rng.choice([0, 1, 1, 2, 2, 2]))
    bank = sentences_for(split)
    for k in rng.choice(len(bank), size=n_speech, replace=False):
        text, topic = bank[int(k)]
        voice = str(rng.choice(VOICES))
        wave = _utterance(rng, text, voice)
        pending.append((wave, AudioItem("speech", "speech", 0, 0, "Speech", text, topic, voice)))
    for name in rng.choice(DISTRACTOR_SOUNDS, size=int(rng.integers(0, 3)), replace=False):
        pending.append((_trimmed(_sound(str(name))), AudioItem("distractor", str(name), 0, 0, None)))
    for i in rng.permutation(len(pending)):
        wave, item = pending[int(i)]
        length = wave.size / RATE
        # distractors may overlap anything; 15 % of the labelled sources may overlap the others
        may_overlap = item.kind == "distractor" or rng.random() < 0.15
        start = _place_item(rng, items, length, duration, may_overlap)
        if start is not None:
            _mix_in(rng, track, items, wave, item, start)
    items.sort(key=lambda it: it.start)
    return track, items


def _picture_weight(pic: Picture) -> float:
    """How often a picture category is drawn: LLP pictures most, then people, then the others."""
    return 0.2 if pic.llp else 0.15 if pic.person else 0.07


def _shot(rng: np.random.Generator, pic: Picture, start: int, end: int) -> Shot:
    """A shot of `pic` from `start` to `end`: one of its images, randomly mirrored."""
    return Shot(pic.name, str(rng.choice(pic.images)), int(start), int(end), pic.llp, pic.person,
                bool(rng.random() < 0.5))


def _compose_shots(rng: np.random.Generator, duration: int) -> list[Shot]:
    n = min(int(rng.integers(2, 5)), duration // 3)
    lengths = 3 + rng.multinomial(duration - 3 * n, rng.dirichlet(np.ones(n)))
    bounds = [0, *np.cumsum(lengths).tolist()]
    weights = np.array([_picture_weight(p) for p in PICTURES])
    picks = rng.choice(len(PICTURES), size=len(bounds) - 1, replace=False, p=weights / weights.sum())
    return [_shot(rng, PICTURES[int(k)], a, b)
            for (a, b), k in zip(zip(bounds[:-1], bounds[1:], strict=True), picks, strict=True)]

# --------------------------------------------------------------------------------------------------
# Scripted composition (corpus v2)
# --------------------------------------------------------------------------------------------------


def _pick_picture(rng: np.random.Generator, used: set[str], person: bool, labelled: bool | None = None) -> Picture:
    """A picture category not yet in the clip, weighted as in v1; `labelled` restricts to (non-)LLP pictures."""
    pool = [p for p in PICTURES if p.person == person and p.name not in used
            and (labelled is None or bool(p.llp) == labelled)]
    weights = np.array([_picture_weight(p) for p in pool])
    pic = pool[int(rng.choice(len(pool), p=weights / weights.sum()))]
    used.add(pic.name)
    return pic


class _ScriptBuilder:
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
        return _mix_in(self.rng, self.track, self.items, wave, item, start)

    def ring(self, start: float, reps: int) -> AudioItem:
        """A phone ringing `reps` times back to back (as v1 repeats it)."""
        snd = next(s for s in SOUNDS if s.name == "phone")
        wave = _repeated(_trimmed(_sound(str(self.rng.choice(snd.files)))), reps)
        item = self.add(wave, AudioItem("sound", snd.name, 0, 0, snd.llp), start)
        assert item is not None, "scripts start the phone early enough for it to fit"
        return item

    def alarm(self, start: float, seconds: float) -> AudioItem:
        snd = next(s for s in SOUNDS if s.name == "alarm")
        wave = _trimmed(_sound(str(self.rng.choice(snd.files))))[: int(seconds * RATE)]
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
            wave = _utterance(self.rng, text, voice)
            if self.fits(start, wave.size / RATE):
                self.spoken.add(text)
                return self.add(wave, AudioItem("speech", "speech", 0, 0, "Speech", text, topic, voice), start)
            if self.duration - 0.2 - start < 1.5:  # no sentence is that short
                return None
        return None

    def cue(self, cut: int) -> None:
        """The cue click, ending just before a cut."""
        wave = _trimmed(_sound(CUE_SOUND))
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
            self.cut(_pick_picture(self.rng, self.used, person=False), at)

    def shots(self) -> list[Shot]:
        bounds = [at for _, at in self.cuts] + [self.duration]
        return [_shot(self.rng, pic, a, b) for (pic, a), b in zip(self.cuts, bounds[1:], strict=True)]


def _answer(b: _ScriptBuilder, sound_end: float) -> None:
    """After a phone or alarm: cut to a person who starts speaking, possibly twice; then maybe cut away."""
    at = int(np.ceil(sound_end + b.rng.uniform(0.2, 0.8)))
    b.cut(_pick_picture(b.rng, b.used, person=True), at)
    voice = str(b.rng.choice(VOICES))
    end = b.talk(at + float(b.rng.uniform(*REPLY_DELAY_S)), [voice], int(b.rng.integers(1, 3)))
    b.close(end)


def _script_phone_call(b: _ScriptBuilder) -> None:
    """A picture; the phone rings 2-3 times; cut to a person who answers."""
    b.cut(_pick_picture(b.rng, b.used, person=False), 0)
    ring = b.ring(float(b.rng.uniform(0.3, 1.2)), int(b.rng.integers(2, 4)))
    _answer(b, ring.end)


def _script_alarm_answer(b: _ScriptBuilder) -> None:
    """A picture; an alarm keeps sounding for 3-5.5 s; cut to a person who speaks ("turn that off")."""
    b.cut(_pick_picture(b.rng, b.used, person=False), 0)
    alarm = b.alarm(float(b.rng.uniform(0.3, 1.2)), float(b.rng.uniform(3.0, 5.5)))
    _answer(b, alarm.end)


def _script_conversation(b: _ScriptBuilder) -> None:
    """Maybe an establishing shot; then a person on screen while two voices take turns."""
    at = 0
    if b.rng.random() < 0.5:
        b.cut(_pick_picture(b.rng, b.used, person=False), 0)
        at = int(b.rng.integers(3, 5))
    b.cut(_pick_picture(b.rng, b.used, person=True), at)
    voices = [str(v) for v in b.rng.choice(VOICES, size=2, replace=False)]
    b.close(b.talk(at + float(b.rng.uniform(*REPLY_DELAY_S)), voices, 3))


def _script_showcase(b: _ScriptBuilder) -> None:
    """An unlabelled picture, then the cat and the motorcycle, each announced by the cue click and held
    4-6 s; a closing shot (a person who speaks, half the time) when there is room."""
    b.cut(_pick_picture(b.rng, b.used, person=False, labelled=False), 0)
    at = int(b.rng.integers(3, 5))
    for _ in range(2):
        if b.duration - at < 4:
            break
        b.cue(at)
        b.cut(_pick_picture(b.rng, b.used, person=False, labelled=True), at)
        at += min(int(b.rng.integers(4, 7)), b.duration - at)
    if b.duration - at >= 3:
        person = b.rng.random() < 0.5
        b.cue(at)
        b.cut(_pick_picture(b.rng, b.used, person=bool(person), labelled=None if person else False), at)
        if person:
            b.talk(at + float(b.rng.uniform(*REPLY_DELAY_S)), [str(b.rng.choice(VOICES))], 1)


_SCRIPT_FNS = {"phone_call": _script_phone_call, "alarm_answer": _script_alarm_answer,
               "conversation": _script_conversation, "showcase": _script_showcase}


def compose_scripted(rng: np.random.Generator, split: str, duration: int, script: str
                     ) -> tuple[np.ndarray, list[AudioItem], list[Shot]]:
    """Soundtrack, audio items and shots of one scripted clip; at most one random distractor (may overlap)."""
    b = _ScriptBuilder(rng, split, duration)
    _SCRIPT_FNS[script](b)
    if rng.random() < 0.3:
        name = str(rng.choice([d for d in DISTRACTOR_SOUNDS if d != CUE_SOUND]))
        wave = _trimmed(_sound(name))
        start = _place_item(rng, b.items, wave.size / RATE, duration, may_overlap=True)
        if start is not None:
            b.add(wave, AudioItem("distractor", name, 0, 0, None), start)
    b.items.sort(key=lambda it: it.start)
    return b.track, b.items, b.shots()


def second_labels(truth: ClipTruth) -> dict[str, np.ndarray]:
    """Per-second LLP multi-hot labels `(T, 25)` for "audio" and "visual" from the composition."""
    T = truth.duration
    audio = np.zeros((T, len(LLP_CLASSES)), np.float32)
    visual = np.zeros_like(audio)
    for it in truth.audio:
        if it.llp is None:
            continue
        for t in range(T):
            if min(it.end, t + 1) - max(it.start, t) >= MIN_OVERLAP_S:
                audio[t, LLP_INDEX[it.llp]] = 1.0
    for shot in truth.shots:
        for t in range(shot.start, min(shot.end, T)):
            if shot.llp is not None:
                visual[t, LLP_INDEX[shot.llp]] = 1.0
            if shot.person and audio[t, LLP_INDEX["Speech"]]:
                visual[t, LLP_INDEX["Speech"]] = 1.0
    return {"audio": audio, "visual": visual}


def _queries(rng: np.random.Generator, truth: ClipTruth) -> list[dict]:
    bank = wording_split(truth.split)
    sounds = {s.name: s for s in SOUNDS}
    pictures = {p.name: p for p in PICTURES}
    out = []

    def add(text: str, start: float, end: float, modality: str, category: str) -> None:
        out.append({"qid": f"{truth.clip_id}-q{len(out)}", "query": text, "vid": truth.clip_id,
                    "duration": float(truth.duration), "relevant_windows": [[round(start, 2), round(end, 2)]],
                    "modality": modality, "category": category, "wording": bank})

    for it in truth.audio:
        if it.kind == "speech":
            add(str(rng.choice(SPEECH_TEMPLATES[bank])).format(topic=it.topic), it.start, it.end, "speech", it.topic)
        elif it.kind == "sound":
            add(str(rng.choice(getattr(sounds[it.name], bank))), it.start, it.end, "audio", it.name)
    for shot in truth.shots:
        add(str(rng.choice(getattr(pictures[shot.category], bank))), shot.start, shot.end, "visual", shot.category)
    return out


def is_scripted(seed: int, index: int, scripts: float) -> bool:
    """Whether clip `index` follows a script (its own RNG stream, so v1 clips keep theirs untouched)."""
    return scripts > 0 and float(np.random.default_rng([seed, 3, index]).random()) < scripts


def compose_clip(clip_id: str, split: str, seed: int, index: int, min_s: int = 12, max_s: int = 16,
                 scripts: float = 0.0) -> tuple[ClipTruth, np.ndarray]:
    """The truth and soundtrack of clip `index` (its own RNG stream, so clips do not depend on each other).

    A share `scripts` of the clips (drawn per clip) follows one of `SCRIPTS`; the rest are v1 clips."""
    if is_scripted(seed, index, scripts):
        rng = np.random.default_rng([seed, 4, index])
        duration = int(rng.integers(min_s, max_s + 1))
        fps = int(rng.choice([10, 12, 15]))
        script = SCRIPTS[int(rng.integers(len(SCRIPTS)))]
        track, audio, shots = compose_scripted(rng, split, duration, script)
        truth = ClipTruth(clip_id, split, duration, fps, audio, shots, script=script)
        truth.queries = _queries(rng, truth)
        return truth, track
    rng = np.random.default_rng([seed, 2, index])
    duration = int(rng.integers(min_s, max_s + 1))
    fps = int(rng.choice([10, 12, 15]))
    track, audio = _compose_audio(rng, split, duration)
    truth = ClipTruth(clip_id, split, duration, fps, audio, _compose_shots(rng, duration))
    truth.queries = _queries(rng, truth)
    return truth, track


def render_clip(path: str | Path, truth: ClipTruth, track: np.ndarray) -> Path:
    """Encode the composed clip (H.264 + AAC MP4)."""
    def frame(t: float) -> np.ndarray:
        shot = next((s for s in truth.shots if s.start <= t < s.end), truth.shots[-1])
        img = _image(shot.image)
        img = img[:, ::-1] if shot.flip else img
        return ken_burns(img, WIDTH, HEIGHT, (t - shot.start) / max(shot.end - shot.start, 1))

    return write_clip(path, ClipSpec(float(truth.duration), float(truth.fps), WIDTH, HEIGHT, frame, track))


# --------------------------------------------------------------------------------------------------
# The corpus on disk
# --------------------------------------------------------------------------------------------------


def clip_ids(n: int) -> list[str]:
    return [f"clip{i:04d}" for i in range(n)]


def write_labels(root: Path, truth: ClipTruth, seconds: int | None = None) -> None:
    """PreFM layout labels `label/label/{audio,visual}/<id>.npy`, cut or zero-padded to `seconds` rows."""
    labels = second_labels(truth)
    for modality, y in labels.items():
        if seconds is not None and seconds != y.shape[0]:
            y = y[:seconds] if seconds < y.shape[0] else np.concatenate([y, np.zeros((seconds - y.shape[0], y.shape[1]),
                                                                                     y.dtype)])
        path = root / "label" / "label" / modality / f"{truth.clip_id}.npy"
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, y)


def load_truths(root: str | Path) -> list[ClipTruth]:
    """Every clip's truth from `<root>/truth/*.json`, in id order."""
    folder = Path(root) / "truth"
    if not folder.is_dir():
        raise FileNotFoundError(f"no composed corpus at {root} (missing truth/)")
    return [ClipTruth.from_dict(json.loads(p.read_text())) for p in sorted(folder.glob("*.json"))]


def write_split_files(root: Path, truths: list[ClipTruth], lengths: dict[str, int] | None = None) -> None:
    """`data_info/<split>_pd.csv` (filename,length) for PreFM and `grounding/<split>.jsonl` for the grounder."""
    lengths = lengths or {}
    (root / "data_info").mkdir(parents=True, exist_ok=True)
    (root / "grounding").mkdir(parents=True, exist_ok=True)
    for split in SPLIT_FRACTIONS:
        members = [t for t in truths if t.split == split]
        with (root / "data_info" / f"{split}_pd.csv").open("w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(["filename", "length"])
            for t in members:
                writer.writerow([t.clip_id, lengths.get(t.clip_id, t.duration)])
        with (root / "grounding" / f"{split}.jsonl").open("w") as fh:
            for t in members:
                for q in t.queries:
                    fh.write(json.dumps(q) + "\n")


def compose_corpus(root: str | Path, n_clips: int, seed: int = 0, min_s: int = 12, max_s: int = 16,
                   progress: bool = True, scripts: float = 0.0) -> list[ClipTruth]:
    """Write `clips/<id>.mp4`, `truth/<id>.json`, labels and split files under `root`; existing clips are kept.

    `scripts` is the share of scripted clips (0 = the v1 corpus)."""
    if min_s < 6 or max_s < min_s:
        raise ValueError(f"need 6 <= min seconds <= max seconds (two shots of 3 s at least), got {min_s}..{max_s}")
    if not 0.0 <= scripts <= 1.0:
        raise ValueError(f"the share of scripted clips must be in [0, 1], got {scripts}")
    if scripts > 0 and min_s < 10:
        raise ValueError(f"scripted clips need at least 10 s (a sound, then a reply), got {min_s}")
    root = Path(root)
    splits = assign_splits(n_clips, seed)
    truths = []
    for i, (cid, split) in enumerate(zip(clip_ids(n_clips), splits, strict=True)):
        truth, track = compose_clip(cid, split, seed, i, min_s, max_s, scripts)
        video = root / "clips" / f"{cid}.mp4"
        truth_path = root / "truth" / f"{cid}.json"
        if not (video.is_file() and truth_path.is_file()
                and json.loads(truth_path.read_text()) == json.loads(json.dumps(truth.to_dict()))):
            render_clip(video, truth, track)
            truth_path.parent.mkdir(parents=True, exist_ok=True)
            truth_path.write_text(json.dumps(truth.to_dict(), indent=1))
        write_labels(root, truth)
        truths.append(truth)
        if progress:
            kind = f", {truth.script}" if truth.script else ""
            print(f"composed {cid} ({split}{kind}, {truth.duration} s, {len(truth.queries)} queries)", flush=True)
    write_split_files(root, truths)
    meta = {"seed": seed, "clips": n_clips, "seconds": [min_s, max_s], "width": WIDTH, "height": HEIGHT,
            "splits": {s: sum(t.split == s for t in truths) for s in SPLIT_FRACTIONS}}
    if scripts > 0:  # v1's corpus.json keeps its keys
        meta["scripts"] = scripts
        meta["scripted"] = {name: sum(t.script == name for t in truths) for name in SCRIPTS}
    (root / "corpus.json").write_text(json.dumps(meta, indent=1))
    return truths
