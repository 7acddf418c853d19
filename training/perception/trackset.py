"""`foresight train trackset`: the labelled tracking set, real-photo cut-outs moving over real background photos.

Each clip (8-12 s, 640x480, 12 fps, H.264 through `training.media.synth.write_clip`) is one background photo of
its split (one random 4:3 crop, a still camera) with 1-3 cut-outs of that split's moving COCO classes (person,
car, truck, bus, dog, sheep, cow, horse, bear, ...). Each object walks along its own ground line (farther lanes
smaller and pasted first, so nearer objects hide them), enters from outside the picture and crosses it; some
turn back, and a second object often comes the other way along a nearby lane, so the two cross each other.
A counting line `count=0.5,0,0.5,1` splits the picture in two. Splits are the detection set's
(`detset_sources.assign_splits`, by source file), so a clip of a split uses only that split's files, and no
tracker choice sees a test file. The tracker is not trained; val and test clips are built by default, and train
clips on request (`--train N`): the train files hold the moving classes val has none of (people, dogs, bears,
horses, buses), so the tracker's knobs are chosen on train and val together (docs/tracking.md, Round 5).

Ground truth per frame is exact: an object's box is the tight box of its alpha mask's VISIBLE pixels as pasted
(`detset.paste`, after the objects in front of it), kept while at least `MIN_VISIBLE` of the object shows.
True line crossings follow each object's planned bottom-centre point frame by frame (`side_of`, the tracking
stage's own side rule), so truth does not depend on what is visible.

Written under `--out` (default data/trackset): `clips/<name>.mp4`, `truth/<name>.json` (split, sources,
objects, per-frame boxes, true crossings) and `trackset.json` (counts per split).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models.zones import LineSpec, parse_line
from pipelines.stages.config import MOVING_CLASSES
from pipelines.stages.crossings import side_of
from training.perception.detset import (
    HEIGHT,
    MAX_UPSCALE,
    WIDTH,
    background_crop,
    paste,
    set_parser,
    tight_box,
)
from training.perception.detset_sources import Source, assign_splits, available, load_background, load_cutout

FPS = 12  # 3 frames a quarter second: the tracker's 4 samples a second fall on whole frames
SPLITS = ("val", "test", "train")  # a clip's random draws are seeded by its split's place here
CLIPS = {"val": 6, "test": 10, "train": 0}
MOVING = MOVING_CLASSES
LINE = "count=0.5,0,0.5,1"
MIN_VISIBLE = 0.25  # share of an object's pixels that must show for it to be in the truth
MIN_SIDE = 8


@dataclass(frozen=True)
class Walker:
    """One object's plan: which cut-out, its scale, lane and how its bottom-centre x moves over time."""

    source: Source
    scale: float
    ground: float  # bottom of the object, pixels from the top
    t0: float  # enters at t0 from outside the picture
    x_start: float  # bottom-centre x at t0 (outside the picture)
    speed: float  # pixels a second, signed
    turn_at: float | None  # time it turns back (None: walks straight on)
    mirror: bool
    gain: float

    def x(self, t: float) -> float:
        if self.turn_at is None or t <= self.turn_at:
            return self.x_start + self.speed * (t - self.t0)
        turned = self.x_start + self.speed * (self.turn_at - self.t0)
        return turned - self.speed * (t - self.turn_at)

    def facing(self, t: float) -> bool:
        return self.mirror != (self.turn_at is not None and t > self.turn_at)


def _walker(rng: np.random.Generator, src: Source, duration: float, lane: float | None = None,
            direction: int | None = None, t0: float | None = None) -> Walker:
    cut = load_cutout(src.locator)
    g = float(np.clip(lane if lane is not None else rng.uniform(0.62, 0.97), 0.58, 0.98))
    depth = (g - 0.5) / 0.48  # 0 at the horizon, 1 at the bottom edge
    long_side = (110 + 170 * depth) * rng.uniform(0.9, 1.1)
    scale = min(long_side / max(cut.shape[:2]), MAX_UPSCALE, 0.55 * WIDTH / cut.shape[1])
    half = cut.shape[1] * scale / 2
    d = direction if direction is not None else int(rng.choice([-1, 1]))
    cross_s = rng.uniform(4.0, 7.0)  # seconds to cross the picture edge to edge
    speed = d * (WIDTH + 2 * half) / cross_s
    start = -half if d > 0 else WIDTH + half
    t_in = float(t0 if t0 is not None else rng.uniform(0.0, 0.3 * duration))
    turn = None
    if rng.random() < 0.3:  # walks in to 30-75% of the way across, then back out
        turn = t_in + (half + rng.uniform(0.3, 0.75) * WIDTH) / abs(speed)
    return Walker(src, scale, g * HEIGHT, t_in, start, speed, turn, bool(rng.random() < 0.5),
                  float(rng.uniform(0.85, 1.15)))


def plan_clip(rng: np.random.Generator, pool: list[Source]) -> tuple[Source, float, list[Walker]]:
    """A background, a duration and 1-3 walkers drawn from one split's pool; the second walker comes the other
    way along a nearby lane (they cross) in 60% of the clips that have one."""
    movers = sorted({s.coco_class for s in pool if s.coco_class in MOVING})
    backgrounds = [s for s in pool if s.coco_class is None]
    background = backgrounds[int(rng.integers(len(backgrounds)))]
    duration = float(rng.integers(8, 13))
    walkers: list[Walker] = []
    for k in range(int(rng.integers(1, 4))):
        cls = movers[int(rng.integers(len(movers)))]
        files = [s for s in pool if s.coco_class == cls]
        src = files[int(rng.integers(len(files)))]
        if k == 1 and rng.random() < 0.6:
            first = walkers[0]
            walkers.append(_walker(rng, src, duration, lane=first.ground / HEIGHT + rng.uniform(-0.08, 0.08),
                                   direction=-int(np.sign(first.speed)), t0=first.t0 + rng.uniform(-0.5, 1.0)))
        else:
            walkers.append(_walker(rng, src, duration))
    return background, duration, walkers


def render(canvas_bg: np.ndarray, walkers: list[Walker], t: float) -> tuple[np.ndarray, list[list[float]]]:
    """One frame at time `t` and its truth: [[walker index, x0, y0, x1, y1], ...] in pixels (x1, y1 exclusive)."""
    canvas = canvas_bg.copy()
    placed: list[tuple[int, np.ndarray, float]] = []  # (walker, visible mask, full pixel count)
    for i in sorted(range(len(walkers)), key=lambda i: walkers[i].ground):  # farther ones first
        w = walkers[i]
        if t < w.t0:
            continue
        cut = load_cutout(w.source.locator)
        sw, sh = max(1, round(cut.shape[1] * w.scale)), max(1, round(cut.shape[0] * w.scale))
        x, y = int(round(w.x(t) - sw / 2)), int(round(w.ground - sh))
        mask = paste(canvas, cut, x, y, w.scale, w.facing(t), w.gain)
        full = float((cut[..., 3] > 127).mean()) * sw * sh
        placed = [(j, m & ~mask, f) for j, m, f in placed] + [(i, mask, full)]
    boxes = []
    for i, mask, full in sorted(placed, key=lambda p: p[0]):
        box = tight_box(mask)
        if box is None or mask.sum() < MIN_VISIBLE * full or min(box[2], box[3]) < MIN_SIDE:
            continue
        boxes.append([i, box[0], box[1], box[0] + box[2], box[1] + box[3]])
    return canvas, boxes


def true_crossings(walkers: list[Walker], duration: float, line: LineSpec) -> dict[str, int]:
    """Crossings of `line` per direction by the walkers' bottom-centre points, frame by frame (its whole plan:
    hidden or not, as a person at the door would count)."""
    counts = {"left_to_right": 0, "right_to_left": 0}
    for w in walkers:
        sides = [side_of(line, w.x(i / FPS) / WIDTH, w.ground / HEIGHT)
                 for i in range(int(round(duration * FPS))) if i / FPS >= w.t0]
        for a, b in zip(sides, sides[1:], strict=False):
            if a != b:
                counts[f"{a}_to_{b}"] += 1
    return counts


def build_clip(path: Path, rng: np.random.Generator, pool: list[Source], split: str) -> dict:
    """Write one clip to `path` and return its truth record."""
    from training.media.synth import ClipSpec, write_clip

    background, duration, walkers = plan_clip(rng, pool)
    bg = background_crop(rng, load_background(background.locator))
    frames: list[list[list[float]]] = []

    def frame(t: float) -> np.ndarray:
        rgb, boxes = render(bg, walkers, t)
        frames.append(boxes)
        return rgb

    write_clip(path, ClipSpec(duration, FPS, WIDTH, HEIGHT, frame, crf=20))
    line = parse_line(LINE)
    return {"split": split, "sources": sorted({background.key} | {w.source.key for w in walkers}),
            "clip": f"clips/{path.name}", "fps": FPS, "size": [WIDTH, HEIGHT], "duration_s": duration,
            "line": LINE, "background": background.key,
            "objects": [{"id": i, "source": w.source.key, "coco_class": w.source.coco_class,
                         "turns": w.turn_at is not None} for i, w in enumerate(walkers)],
            "frames": frames, "crossings": {line.name: true_crossings(walkers, duration, line)}}


def build(out: str | Path, seed: int = 0, clips: dict[str, int] | None = None) -> dict:
    """Write the set under `out` (see the module docstring); returns the summary also written to trackset.json."""
    out, clips = Path(out), clips or CLIPS
    sources = available()
    split_of = assign_splits(sources, seed).split_of
    (out / "clips").mkdir(parents=True, exist_ok=True)
    (out / "truth").mkdir(exist_ok=True)
    summary: dict = {"seed": seed, "fps": FPS, "size": [WIDTH, HEIGHT], "line": LINE, "splits": {}}
    before = out / "trackset.json"
    if before.exists() and json.loads(before.read_text()).get("seed") == seed:  # a split added to a built set
        summary["splits"] = json.loads(before.read_text()).get("splits", {})
    for split, n in clips.items():
        if n < 1:
            continue
        pool = [s for s in sources if split_of[s.key] == split]
        if not any(s.coco_class in MOVING for s in pool) or all(s.coco_class for s in pool):
            raise ValueError(f"split {split} has no moving cut-outs or no backgrounds: install "
                             "tuxpaint-stamps-default and tuxtype-data (scripts/bootstrap.sh)")
        objects = crossings = 0
        for i in range(n):
            name = f"{split}{i:03d}"
            truth = build_clip(out / "clips" / f"{name}.mp4", np.random.default_rng([seed, SPLITS.index(split), i]),
                               pool, split)
            (out / "truth" / f"{name}.json").write_text(json.dumps(truth))
            objects += len(truth["objects"])
            crossings += sum(sum(c.values()) for c in truth["crossings"].values())
        summary["splits"][split] = {"clips": n, "objects": objects, "crossings": crossings}
    (out / "trackset.json").write_text(json.dumps(summary, indent=1))
    return summary


def build_main(argv: list[str]) -> int:
    p = set_parser("trackset", __doc__, {s: CLIPS[s] for s in SPLITS}, "clips")
    a = p.parse_args(argv)
    try:
        summary = build(a.out, a.seed, {s: getattr(a, s) for s in SPLITS})
    except (ValueError, OSError) as exc:
        print(f"foresight: error: {exc}", file=sys.stderr)
        return 2
    for split, s in summary["splits"].items():
        print(f"{split:5} {s['clips']:3} clips {s['objects']:3} objects {s['crossings']:3} line crossings")
    print(f"written to {a.out}")
    return 0
