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

import json
from pathlib import Path

import numpy as np

from training.corpus import mixing
from training.corpus.layout import SPLIT_FRACTIONS, clip_ids, write_labels, write_split_files
from training.corpus.scripts import NOISE_LEVEL, SCRIPTS, compose_scripted
from training.corpus.sources import (
    DISTRACTOR_SOUNDS,
    PICTURES,
    SOUNDS,
    SPEECH_TEMPLATES,
    VOICES,
    sentences_for,
    wording_split,
)
from training.corpus.truth import AudioItem, ClipTruth, Shot
from training.media.synth import RATE, ClipSpec, ken_burns, write_clip

WIDTH, HEIGHT = 640, 360


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


def _compose_audio(rng: np.random.Generator, split: str, duration: int) -> tuple[np.ndarray, list[AudioItem]]:
    track = (NOISE_LEVEL * rng.standard_normal(duration * RATE)).astype(np.float32)
    items: list[AudioItem] = []
    pending: list[tuple[np.ndarray, AudioItem]] = []
    for snd in SOUNDS:
        if rng.random() < 0.5:
            base = mixing.trimmed(mixing.recording(str(rng.choice(snd.files))))
            wave = mixing.repeated(base, int(rng.integers(snd.repeat[0], snd.repeat[1] + 1)))
            wave = wave[: int(rng.uniform(2.0, snd.max_s) * RATE)] if wave.size / RATE > snd.max_s else wave
            pending.append((wave, AudioItem("sound", snd.name, 0, 0, snd.llp)))
    n_speech = int(rng.choice([0, 1, 1, 2, 2, 2]))
    bank = sentences_for(split)
    for k in rng.choice(len(bank), size=n_speech, replace=False):
        text, topic = bank[int(k)]
        voice = str(rng.choice(VOICES))
        wave = mixing.utterance(rng, text, voice)
        pending.append((wave, AudioItem("speech", "speech", 0, 0, "Speech", text, topic, voice)))
    for name in rng.choice(DISTRACTOR_SOUNDS, size=int(rng.integers(0, 3)), replace=False):
        pending.append((mixing.trimmed(mixing.recording(str(name))), AudioItem("distractor", str(name), 0, 0, None)))
    for i in rng.permutation(len(pending)):
        wave, item = pending[int(i)]
        length = wave.size / RATE
        # distractors may overlap anything; 15 % of the labelled sources may overlap the others
        may_overlap = item.kind == "distractor" or rng.random() < 0.15
        start = mixing.place_item(rng, items, length, duration, may_overlap)
        if start is not None:
            mixing.mix_in(rng, track, items, wave, item, start)
    items.sort(key=lambda it: it.start)
    return track, items


def _compose_shots(rng: np.random.Generator, duration: int) -> list[Shot]:
    n = min(int(rng.integers(2, 5)), duration // 3)
    lengths = 3 + rng.multinomial(duration - 3 * n, rng.dirichlet(np.ones(n)))
    bounds = [0, *np.cumsum(lengths).tolist()]
    weights = np.array([mixing.picture_weight(p) for p in PICTURES])
    picks = rng.choice(len(PICTURES), size=len(bounds) - 1, replace=False, p=weights / weights.sum())
    return [mixing.make_shot(rng, PICTURES[int(k)], a, b)
            for (a, b), k in zip(zip(bounds[:-1], bounds[1:], strict=True), picks, strict=True)]


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
        img = mixing.image(shot.image)
        img = img[:, ::-1] if shot.flip else img
        return ken_burns(img, WIDTH, HEIGHT, (t - shot.start) / max(shot.end - shot.start, 1))

    return write_clip(path, ClipSpec(float(truth.duration), float(truth.fps), WIDTH, HEIGHT, frame, track))


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
