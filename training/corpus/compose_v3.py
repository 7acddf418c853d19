"""Corpus v3: clips composed only from real recordings and photos, split by source recording.

Every kept recording and photo (`real_sources`, `label_check`) is assigned to exactly one split before any clip
is composed (`assign_sources`): per LLP class, one file goes to test, one to val when the class has three or
more, the rest to train; a class with one file is train-only (it can be learnt but not tested); Speech voices,
backgrounds, distractors and non-target photos are cut 60/15/25. A clip of a split draws only from that split's
pool, so no file feeds two splits (`tests/test_corpus_v3_splits.py` checks the written truth files).

A clip (12-14 s) is a real background ambience (or quiet noise) with, in most clips, 1-3 target recordings and
0-2 distractors placed without overlap; a quarter of the clips are negatives with no target event at all.
Labels are exact because we placed every source: audio second t has a class when the recording's audible extent
overlaps [t, t+1) by >= 0.3 s. Pictures: 2-4 shots with a slow Ken Burns zoom; a visual label holds only while
its photo is on screen; a shot aligned with a sound shows that class's photo when the split has one.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models.taxonomy import readable
from training.corpus.layout import write_labels, write_split_files
from training.corpus.mixing import audible_extent
from training.corpus.real_sources import Photo, Recording, load_photo, load_recording
from training.corpus.truth import AudioItem, ClipTruth, Shot

RATE = 16_000
WIDTH, HEIGHT = 640, 360
CLIP_SPLITS = {"train": 0.6, "val": 0.15, "test": 0.25}
NEGATIVE_SHARE = 0.25
MAX_EVENT_S = 6.0
LABEL_CHECK = Path(__file__).resolve().parents[2] / "docs" / "results" / "corpus_v3_label_check.json"


def _order(key: str, seed: int) -> str:
    return hashlib.sha1(f"{seed}:{key}".encode()).hexdigest()


def _split_group(keys: list[str], seed: int, by_class: bool) -> dict[str, str]:
    """Split assignment of one group of files (see the module docstring)."""
    keys = sorted(keys, key=lambda k: _order(k, seed))
    n = len(keys)
    if by_class:
        n_test, n_val = (1 if n >= 2 else 0), (1 if n >= 3 else 0)
    else:
        n_test, n_val = max(1, round(CLIP_SPLITS["test"] * n)), max(1, round(CLIP_SPLITS["val"] * n))
    return {k: "test" if i < n_test else "val" if i < n_test + n_val else "train" for i, k in enumerate(keys)}


@dataclass
class SourcePools:
    """The files each split may use: recordings by role and class, photos by class."""

    split_of: dict[str, str]
    recordings: dict[str, list[Recording]]
    photos: dict[str, list[Photo]]

    def events(self, split: str) -> dict[str, list[Recording]]:
        out: dict[str, list[Recording]] = defaultdict(list)
        for r in self.recordings[split]:
            if r.role == "event" and r.llp:
                out[r.llp].append(r)
        return dict(out)

    def role(self, split: str, role: str) -> list[Recording]:
        return [r for r in self.recordings[split] if r.role == role]


def assign_sources(recordings: list[Recording], photos: list[Photo], seed: int = 0) -> SourcePools:
    """Give every file exactly one split (files with identical content count as one file)."""
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for r in recordings:
        kind = "speech" if r.llp == "Speech" else r.llp if r.role == "event" else r.role
        groups[("rec", kind or r.role)].append(r.key)
    for p in photos:
        groups[("photo", p.llp or "none")].append(p.key)
    split_of: dict[str, str] = {}
    for (_, kind), keys in groups.items():
        by_class = kind not in ("speech", "background", "distractor", "none")
        split_of.update(_split_group(keys, seed, by_class))
    recs = {s: [r for r in recordings if split_of[r.key] == s] for s in CLIP_SPLITS}
    pics = {s: [p for p in photos if split_of[p.key] == s] for s in CLIP_SPLITS}
    return SourcePools(split_of, recs, pics)


def clip_splits(n: int, seed: int) -> list[str]:
    order = np.random.default_rng([seed, 31]).permutation(n)
    n_test, n_val = round(CLIP_SPLITS["test"] * n), round(CLIP_SPLITS["val"] * n)
    out = ["train"] * n
    for k, i in enumerate(order):
        out[int(i)] = "test" if k < n_test else "val" if k < n_test + n_val else "train"
    return out


def _segment(rng: np.random.Generator, wave: np.ndarray, max_s: float) -> np.ndarray:
    """A random stretch of at most `max_s` seconds, with leading and trailing silence trimmed."""
    a, b = audible_extent(wave)
    wave = wave[int(a * RATE): int(np.ceil(b * RATE))]
    n = int(max_s * RATE)
    if wave.size > n:
        start = int(rng.integers(0, wave.size - n))
        wave = wave[start:start + n]
        a, b = audible_extent(wave)
        wave = wave[int(a * RATE): int(np.ceil(b * RATE))]
    return wave


def _place(rng: np.random.Generator, taken: list[tuple[float, float]], length: float, duration: int) -> float | None:
    latest = duration - length - 0.2
    for _ in range(30):
        if latest < 0.2:
            return None
        start = round(float(rng.uniform(0.2, latest)), 2)
        if all(start + length + 0.3 <= s or start >= e + 0.3 for s, e in taken):
            return start
    return None


def compose_clip(clip_id: str, split: str, pools: SourcePools, seed: int, index: int
                 ) -> tuple[ClipTruth, np.ndarray, dict[str, str]]:
    """Truth, soundtrack and, in the third value, the clip's source keys (JSON, under "sources") and the photo
    locator of each shot (by `Shot.image`). Each clip has its own RNG stream, so clips do not depend on each other."""
    rng = np.random.default_rng([seed, 32, index])
    duration = int(rng.integers(12, 15))
    track = (0.002 * rng.standard_normal(duration * RATE)).astype(np.float32)
    items: list[AudioItem] = []
    sources: list[str] = []
    backgrounds = pools.role(split, "background")
    if backgrounds and rng.random() < 0.75:
        bg = backgrounds[int(rng.integers(len(backgrounds)))]
        wave = load_recording(bg.locator)
        reps = int(np.ceil(track.size / max(wave.size, 1)))
        bed = np.tile(wave, reps)[: track.size]
        track += float(rng.uniform(0.05, 0.2)) * bed / max(float(np.abs(bed).max()), 1e-6)
        items.append(AudioItem("background", bg.key, 0.0, float(duration), None))
        sources.append(bg.key)
    events = pools.events(split)
    negative = rng.random() < NEGATIVE_SHARE or not events
    taken: list[tuple[float, float]] = []
    planned: list[tuple[Recording, str]] = []
    if not negative:
        classes = sorted(events)
        for llp in rng.choice(classes, size=min(int(rng.integers(1, 4)), len(classes)), replace=False):
            pick = events[str(llp)]
            planned.append((pick[int(rng.integers(len(pick)))], "sound"))
    distractors = pools.role(split, "distractor")
    for _ in range(int(rng.integers(0, 3)) if distractors else 0):
        planned.append((distractors[int(rng.integers(len(distractors)))], "distractor"))
    for rec, kind in planned:
        wave = _segment(rng, load_recording(rec.locator), MAX_EVENT_S)
        start = _place(rng, taken, wave.size / RATE, duration)
        if start is None or wave.size < RATE // 5:
            continue
        gain = float(rng.uniform(0.4, 0.9))
        seg = track[int(start * RATE): int(start * RATE) + wave.size]
        seg += gain * wave[: seg.size] / max(float(np.abs(wave).max()), 1e-6)
        end = round(start + wave.size / RATE, 2)
        taken.append((start, end))
        llp = rec.llp if kind == "sound" else None
        items.append(AudioItem("speech" if llp == "Speech" else kind, rec.key, start, end, llp))
        sources.append(rec.key)
    shots, photo_of = _shots(rng, split, pools, duration, items, negative)
    sources += sorted({s.category for s in shots})
    truth = ClipTruth(clip_id, split, duration, int(rng.choice([10, 12, 15])), items, shots)
    truth.queries = _queries(truth)
    truth.script = "v3"
    return truth, np.clip(track, -1.0, 1.0), {"sources": json.dumps(sources), **photo_of}


def _shots(rng: np.random.Generator, split: str, pools: SourcePools, duration: int, items: list[AudioItem],
           negative: bool) -> tuple[list[Shot], dict[str, str]]:
    """Shots over whole seconds; a negative clip shows only non-target photos (no event in either modality)."""
    photos = pools.photos[split]
    if negative:
        photos = [p for p in photos if p.llp is None] or photos
    by_class: dict[str | None, list[Photo]] = defaultdict(list)
    for p in photos:
        by_class[p.llp].append(p)
    n = min(int(rng.integers(2, 5)), duration // 3)
    lengths = 3 + rng.multinomial(duration - 3 * n, rng.dirichlet(np.ones(n)))
    bounds = [0, *np.cumsum(lengths).tolist()]
    shots, photo_of = [], {}
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        heard = [it.llp for it in items if it.llp and it.start < b and it.end > a and by_class.get(it.llp)]
        if heard and rng.random() < 0.5:
            pick = by_class[heard[0]]
        else:
            pool = photos if rng.random() < 0.6 else by_class.get(None, photos)
            pick = pool or photos
        photo = pick[int(rng.integers(len(pick)))]
        name = f"p{len(shots)}"
        photo_of[name] = photo.locator
        shots.append(Shot(photo.key, name, int(a), int(b), photo.llp, photo.key == "skimage:astronaut",
                          bool(rng.random() < 0.5)))
    return shots, photo_of


def _queries(truth: ClipTruth) -> list[dict]:
    out = []
    for it in truth.audio:
        if it.llp:
            out.append((f"{readable(it.llp).lower()} is heard", it.start, it.end, "audio", it.llp))
    for s in truth.shots:
        if s.llp:
            out.append((f"{readable(s.llp).lower()} is on screen", s.start, s.end, "visual", s.llp))
    return [{"qid": f"{truth.clip_id}-q{i}", "query": q, "vid": truth.clip_id, "duration": float(truth.duration),
             "relevant_windows": [[round(a, 2), round(b, 2)]], "modality": m, "category": c, "wording": "v3"}
            for i, (q, a, b, m, c) in enumerate(out)]


def render(path: Path, truth: ClipTruth, track: np.ndarray, locators: dict[str, str]) -> Path:
    """Encode the clip (H.264 + AAC MP4): each shot slowly zooms into its photo."""
    from training.media.synth import ClipSpec, ken_burns, write_clip

    def frame(t: float) -> np.ndarray:
        shot = next((s for s in truth.shots if s.start <= t < s.end), truth.shots[-1])
        img = load_photo(locators[shot.image])
        img = img[:, ::-1] if shot.flip else img
        return ken_burns(np.ascontiguousarray(img), WIDTH, HEIGHT, (t - shot.start) / max(shot.end - shot.start, 1))

    return write_clip(path, ClipSpec(float(truth.duration), float(truth.fps), WIDTH, HEIGHT, frame, track))


def compose_corpus_v3(root: str | Path, n_clips: int, seed: int = 0, progress: bool = True,
                      version: int = 3) -> list[ClipTruth]:
    """Write clips, truth (with each clip's source files), labels and split files; existing clips are kept.

    Version 3 draws from the first source round, version 4 from every inventoried source (the second round grew
    the per-class groups, which moves some first-round files to another split: a new corpus, not a v3 rebuild)."""
    from tqdm import tqdm

    from training.corpus.label_check import check_recordings, kept_keys
    from training.corpus.real_sources import all_photos, all_recordings

    root = Path(root)
    verdicts = check_recordings(LABEL_CHECK, progress)
    keep = kept_keys(verdicts)
    inventory = all_recordings(extra=version >= 4)
    pools = assign_sources([r for r in inventory if r.key in keep], _unique_photos(all_photos()), seed)
    (root).mkdir(parents=True, exist_ok=True)
    (root / "sources.json").write_text(json.dumps(pools.split_of, indent=1, sort_keys=True))
    truths = []
    for i, split in enumerate(tqdm(clip_splits(n_clips, seed), desc=f"compose v{version}", disable=not progress)):
        cid = f"v{version}clip{i:04d}"
        truth, track, extra = compose_clip(cid, split, pools, seed, i)
        record = {**truth.to_dict(), "sources": json.loads(extra.pop("sources")), "photos": extra}
        video, truth_path = root / "clips" / f"{cid}.mp4", root / "truth" / f"{cid}.json"
        if not (video.is_file() and truth_path.is_file() and json.loads(truth_path.read_text()) == record):
            render(video, truth, track, extra)
            truth_path.parent.mkdir(parents=True, exist_ok=True)
            truth_path.write_text(json.dumps(record, indent=1))
        write_labels(root, truth)
        truths.append(truth)
    write_split_files(root, truths)
    (root / "corpus.json").write_text(json.dumps({"version": version, "seed": seed, "clips": n_clips, "splits": {
        s: sum(t.split == s for t in truths) for s in CLIP_SPLITS}}, indent=1))
    return truths


def _unique_photos(photos: list[Photo]) -> list[Photo]:
    """Drop photos whose pixels equal an earlier one (gcompris ships some photos in two bundles)."""
    seen, out = set(), []
    for p in photos:
        digest = hashlib.sha1(load_photo(p.locator).tobytes()).hexdigest()
        if digest not in seen:
            seen.add(digest)
            out.append(p)
    return out


def split_violations(root: str | Path) -> dict[str, list[str]]:
    """Source files that feed more than one split in the corpus at `root` (from each truth file's `sources`),
    with the splits they feed; empty when the corpus is clean."""
    feeds: dict[str, set[str]] = defaultdict(set)
    for path in sorted((Path(root) / "truth").glob("*.json")):
        record = json.loads(path.read_text())
        if "sources" not in record:
            raise ValueError(f"{path} lists no sources (not a v3 truth file)")
        for key in record["sources"]:
            feeds[key].add(record["split"])
    return {key: sorted(splits) for key, splits in feeds.items() if len(splits) > 1}
