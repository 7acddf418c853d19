"""Choosing the tracker's settings on the tracking set's val split, without rerunning the detector per setting.

    python -m benchmarks.tracking_sweep --set data/trackset --split val --cache /tmp/trackcache \\
        --json docs/results/tracking_sweep_val.json

Step one runs each clip once per detector through the real pipeline (`benchmarks.tracking.analyse`, tracking at
`--track-fps 12`, every frame of the 12-fps clips) and records what the tracking stage is given (each second's
per-frame detections, down to `CAPTURE_FLOOR`), cached as JSON under `--cache`. Step two replays those seconds
through the real `TrackStage` under each setting of the grid (a lower rate takes every n-th frame, as the
decoder would sample it) and scores the tracks as `benchmarks.tracking` does. The chosen setting is then
scored end to end with `benchmarks.tracking` (val, then test once). `--grid` picks the settings swept: round 2's
(the default), round 3's track filters and line hysteresis, `trackers`' other trackers, or ByteTrack's
association (`GRIDS`).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from dataclasses import replace
from pathlib import Path

from benchmarks.tracking import accumulate, line_errors, mot_summary, options
from pipelines.stages.config import MOVING_CLASSES as MOVING

FUSED = "ssd-mobilenetv2+nanodet"  # replayed from its members' captures (fused_capture)
DETECTORS = ("ssd-mobilenetv2", "nanodet", "yolov3-tiny", FUSED)
GRIDS = {
    # round 2: rate, floors, motion rule, buffer and classes (docs/results/tracking_sweep_val_*.json)
    "round2": {"track_fps": (4.0, 12.0), "track_min_score": (0.1, 0.2, 0.3, 0.4), "track_high": (None, 0.3, 0.5),
               "track_moved": (0.0, 0.06, 0.1), "track_buffer_s": (4.0, 6.0), "track_match": (0.1,),
               "classes": ("all", "moving")},
    # round 3: track-level filters (hits before an id, a confirming score) and line hysteresis around round 2's
    "round3": {"track_fps": (4.0,), "track_min_score": (0.1, 0.2), "track_high": (0.3, 0.4),
               "track_moved": (0.06,), "track_buffer_s": (4.0,), "track_match": (0.1,), "classes": ("moving",),
               "track_min_hits": (1, 3, 4), "track_confirm_score": (0.0, 0.4, 0.5, 0.6),
               "track_line_hits": (1, 2, 3)},
    # round 3b: the other trackers of `trackers` 2.6.1 at round 3's setting
    "trackers": {"track_fps": (4.0,), "track_min_score": (0.1,), "track_high": (0.3, 0.4), "track_moved": (0.06,),
                 "track_buffer_s": (4.0,), "track_match": (0.1,), "classes": ("moving",), "track_min_hits": (1,),
                 "track_confirm_score": (0.0,), "track_line_hits": (3,),
                 "track_tracker": ("bytetrack", "ocsort", "cbiou", "botsort")},
    # round 3c: ByteTrack's matching IoU and lost-track buffer at round 3's setting
    "association": {"track_fps": (4.0,), "track_min_score": (0.1,), "track_high": (0.3,), "track_moved": (0.06,),
                    "track_buffer_s": (2.0, 4.0, 6.0), "track_match": (0.05, 0.1, 0.2, 0.3), "classes": ("moving",),
                    "track_min_hits": (1,), "track_confirm_score": (0.0,), "track_line_hits": (3,)},
    # session 28 (round 4), after fixing the lost-track buffer's unit (tracking.make_tracker): one box per object
    # before the tracker (`track_nms`, None: off), the gaps filled (`track_fill`), and ByteTrack's high threshold
    # and buffer again, as duplicates no longer weigh on them
    "round4": {"track_fps": (4.0,), "track_min_score": (0.1,), "track_high": (0.2, 0.25, 0.3, 0.4),
               "track_moved": (0.06,), "track_buffer_s": (1.0, 2.0, 4.0), "track_match": (0.1,),
               "classes": ("moving",), "track_min_hits": (1,), "track_confirm_score": (0.0,),
               "track_line_hits": (3,), "track_fill": (False, True), "track_nms": (None, 0.4, 0.5, 0.6, 0.7)},
    # round 4b: around round 4's best, with the matching IoU and line hysteresis again
    "round4b": {"track_fps": (4.0,), "track_min_score": (0.1,), "track_high": (0.15, 0.2, 0.25),
                "track_moved": (0.06,), "track_buffer_s": (0.5, 1.0, 1.5), "track_match": (0.1, 0.2, 0.3),
                "classes": ("moving",), "track_min_hits": (1,), "track_confirm_score": (0.0,),
                "track_line_hits": (1, 2, 3), "track_fill": (True,), "track_nms": (0.5, 0.6)},
    # round 4c: a track reported only once seen `track_min_seen` times with its id (no ghost of one sample)
    "round4c": {"track_fps": (4.0,), "track_min_score": (0.1,), "track_high": (0.2,), "track_moved": (0.06,),
                "track_buffer_s": (1.0,), "track_match": (0.2,), "classes": ("moving",), "track_min_hits": (1,),
                "track_confirm_score": (0.0,), "track_line_hits": (1,), "track_fill": (True,), "track_nms": (0.5,),
                "track_min_seen": (1, 2, 3, 4, 6)},
    # session 29 (round 5), with each track's boxes before its id found again (tracking.TrackStage._backtrack):
    # lower floors (captured with --capture-floor 0.02) for ByteTrack's second association and the walk back
    "round5": {"track_fps": (4.0,), "track_min_score": (0.02, 0.05, 0.1), "track_high": (0.2, 0.3),
               "track_moved": (0.06,), "track_buffer_s": (1.0, 2.0), "track_match": (0.2, 0.3),
               "classes": ("moving",), "track_min_hits": (1,), "track_confirm_score": (0.0,),
               "track_line_hits": (1,), "track_fill": (True,), "track_nms": (0.5,), "track_min_seen": (2, 3)},
    # round 5b: around round 5's best
    "round5b": {"track_fps": (4.0,), "track_min_score": (0.1,), "track_high": (0.15, 0.2, 0.25),
                "track_moved": (0.06,), "track_buffer_s": (0.75, 1.0, 1.5), "track_match": (0.15, 0.2, 0.25),
                "classes": ("moving",), "track_min_hits": (1,), "track_confirm_score": (0.0,),
                "track_line_hits": (1,), "track_fill": (True,), "track_nms": (0.5,), "track_min_seen": (2, 3, 4)},
    # round 5c, on val and train together (train holds the people, dogs and bears val lacks): whether a person
    # standing still is reported before it moves (`track_still_people`), with the knobs round 5b tied on
    "round5c": {"track_fps": (4.0,), "track_min_score": (0.1,), "track_high": (0.2, 0.25, 0.3),
                "track_moved": (0.03, 0.06, 0.1), "track_buffer_s": (1.0, 1.5), "track_match": (0.15, 0.2),
                "classes": ("moving",), "track_min_hits": (1,), "track_confirm_score": (0.0,),
                "track_line_hits": (1,), "track_fill": (True,), "track_nms": (0.5,), "track_min_seen": (3, 4),
                "track_still_people": (True, False)},
    # round 5d: round 5c's best motion rule (0.1) was at its grid's edge
    "round5d": {"track_fps": (4.0,), "track_min_score": (0.1,), "track_high": (0.2, 0.25, 0.3),
                "track_moved": (0.1, 0.15, 0.2), "track_buffer_s": (1.0, 1.5), "track_match": (0.15, 0.2),
                "classes": ("moving",), "track_min_hits": (1,), "track_confirm_score": (0.0,),
                "track_line_hits": (1,), "track_fill": (True,), "track_nms": (0.5,), "track_min_seen": (3, 4),
                "track_still_people": (False,)},
    # round 5e: the line hysteresis again at round 5's setting (train's extra crossings flicker on the line)
    "round5e": {"track_fps": (4.0,), "track_min_score": (0.1,), "track_high": (0.2,), "track_moved": (0.1,),
                "track_buffer_s": (1.5,), "track_match": (0.2,), "classes": ("moving",), "track_min_hits": (1,),
                "track_confirm_score": (0.0,), "track_line_hits": (1, 2, 3, 4), "track_fill": (True,),
                "track_nms": (0.5,), "track_min_seen": (4,), "track_still_people": (False,)},
    # round 6 (session 32): the fused SSD + NanoDet detector, its members' weights and the tracker's two score
    # thresholds (its boxes score on their own scale), round 5's other knobs
    "round6": {"fuse_weights": ((1.0, 1.0), (2.0, 1.0), (3.0, 1.0)), "track_fps": (4.0,),
               "track_min_score": (0.1, 0.15, 0.2), "track_high": (0.2, 0.3, 0.4), "track_moved": (0.1,),
               "track_buffer_s": (1.5,), "track_match": (0.2,), "classes": ("moving",), "track_min_hits": (1,),
               "track_confirm_score": (0.0,), "track_line_hits": (2,), "track_fill": (True,), "track_nms": (0.5,),
               "track_min_seen": (4,), "track_still_people": (False,)},
    # round 7 (session 33): a crossing counted at once from `track_line_margin` beyond the line, with the line
    # hysteresis again, at round 5's setting; round 7b adds the linking of a lost track to a new one nearby
    # (`track_relink_s`, `track_relink_reach`); round7-fused is 7b for the pair at round 6's setting
    "round7": {"track_fps": (4.0,), "track_min_score": (0.1,), "track_high": (0.2,), "track_moved": (0.1,),
               "track_buffer_s": (1.5,), "track_match": (0.2,), "classes": ("moving",), "track_min_hits": (1,),
               "track_confirm_score": (0.0,), "track_line_hits": (1, 2, 3),
               "track_line_margin": (0.0, 0.01, 0.02, 0.03, 0.05, 0.08), "track_relink_s": (0.0,),
               "track_fill": (True,), "track_nms": (0.5,), "track_min_seen": (4,), "track_still_people": (False,)},
}
GRIDS["round7b"] = {**GRIDS["round7"], "track_line_hits": (2,), "track_line_margin": (0.0, 0.03, 0.05),
                    "track_relink_s": (0.0, 1.0, 2.0, 3.0, 5.0), "track_relink_reach": (0.5, 1.0, 1.5)}
GRIDS["round7-fused"] = {**GRIDS["round7b"], "fuse_weights": ((2.0, 1.0),), "track_min_score": (0.15,),
                         "track_high": (0.3,)}
GRID = GRIDS["round2"]
# what a grid that does not name them replays with (the knobs as they were before rounds 4 and 7)
EARLIER = {"track_nms": None, "track_fill": False, "track_min_seen": 1, "track_still_people": True,
           "track_line_margin": 0.0, "track_relink_s": 0.0}
CAPTURE_FLOOR = "0.1"  # the recorded boxes go down to this score (--capture-floor); each setting's floor filters them


def capture(clip: Path, line: str, detector: str, floor: str = CAPTURE_FLOOR) -> list[dict]:
    """Each second the tracking stage was given on `clip` (12 samples a second, `detector`, boxes down to
    `floor`): [{index, frames}]."""
    from pipelines.stages.tracking import TrackStage

    seconds: list[dict] = []
    real = TrackStage.process

    def spy(self, record, visual):
        if (visual or {}).get("frames"):
            seconds.append({"index": record.index, "frames": json.loads(json.dumps(visual["frames"]))})
        return real(self, record, visual)

    TrackStage.process = spy
    try:
        from pipelines import analyze_inline

        opts = options(line, ["--track-fps", "12", "--detector", detector, "--track-min-score", floor])
        analyze_inline(str(clip), opts)
    finally:
        TrackStage.process = real
    return seconds


def replay(seconds: list[dict], truth: dict, setting: dict) -> tuple:
    """The real tracking stage on recorded seconds under `setting`: (motmetrics accumulator, line error)."""
    tracks, crossings = run_stage(seconds, truth, setting)
    return accumulate(truth, tracks), line_errors(truth, crossings)


def run_stage(seconds: list[dict], truth: dict, setting: dict) -> tuple[list[dict], list[dict]]:
    """The real tracking stage on recorded seconds under `setting`: (its final tracks, its crossings)."""
    from pipelines.stages.record import Second
    from pipelines.stages.tracking import TrackStage

    cfg = options(truth["line"]).stages
    setting = {**EARLIER, **setting}
    classes = MOVING if setting["classes"] == "moving" else ()
    cfg = replace(cfg, **{k: v for k, v in setting.items() if k != "classes"}, track_classes=classes)
    step = int(round(truth["fps"] / setting["track_fps"]))
    stage, crossings = TrackStage(cfg), []
    for s in seconds:
        frames = [f for f in s["frames"] if int(round(f["t"] * truth["fps"])) % step == 0]
        rec = stage.process(Second(index=s["index"], start=s["index"], end=s["index"] + 1), {"frames": frames})
        crossings += rec.crossings
    return stage.finish(Second.closing()).tracks, crossings


def split_truths(root: Path, split: str) -> list[Path]:
    """The truth files of `split` ("val", "train", or "val+train"), in clip order."""
    return [p for part in split.split("+") for p in sorted((root / "truth").glob(f"{part}*.json"))]


def capture_folder(cache: Path, detector: str, floor: str) -> Path:
    """Where `detector`'s capture down to `floor` is kept (round 2-4's captures, at the default floor: no suffix)."""
    return cache / (detector if floor == CAPTURE_FLOOR else f"{detector}@{floor}")


def recorded(root: Path, truths: list[dict], names: list[str], cache: Path, detector: str, floor: str) -> list:
    """Each clip's seconds as `detector` gave them to the tracking stage, captured once and cached."""
    out = []
    for truth, name in zip(truths, names, strict=True):
        path = capture_folder(cache, detector, floor) / f"{name}.json"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(capture(root / truth["clip"], truth["line"], detector, floor)))
            print(f"captured {detector} {name}", file=sys.stderr, flush=True)
        out.append(json.loads(path.read_text()))
    return out


def fused_capture(members: list[list], weights: tuple[float, ...], floor: float) -> list:
    """The fused detector's seconds rebuilt from its members' captures (made at or below their own floors): each
    member's boxes down to its floor, fused with `weights` by `FusedDetector`'s own `fuse`, down to `floor`."""
    from models.encoders.fused import MEMBERS, fuse

    clips = []
    for per_member in zip(*members, strict=True):
        frames_of = [{(s["index"], round(f["t"], 3)): f for s in clip for f in s["frames"]} for clip in per_member]
        seconds = []
        for second in per_member[0]:
            frames = []
            for f in second["frames"]:
                key = (second["index"], round(f["t"], 3))
                dets = [[d for d in m.get(key, {"detections": []})["detections"] if d["score"] >= m_floor]
                        for m, (_, _, m_floor) in zip(frames_of, MEMBERS, strict=True)]
                frames.append({**f, "detections": fuse(dets, weights, floor)})
            seconds.append({"index": second["index"], "frames": frames})
        clips.append(seconds)
    return clips


def sweep(root: Path, split: str, cache: Path, detectors: tuple[str, ...], grid: dict = GRID,
          floor: str = CAPTURE_FLOOR) -> list[dict]:
    from models.encoders.fused import MEMBERS

    truths = [json.loads(p.read_text()) for p in split_truths(root, split)]
    names = [Path(t["clip"]).stem for t in truths]
    rows = []
    for detector in detectors:
        if detector == FUSED:
            members = [recorded(root, truths, names, cache, name, floor) for name, _, _ in MEMBERS]
            fused = {}
        else:
            seconds = recorded(root, truths, names, cache, detector, floor)
        for values in itertools.product(*grid.values()):
            setting = dict(zip(grid, values, strict=True))
            if detector == FUSED:
                weights = setting.get("fuse_weights", tuple(w for _, w, _ in MEMBERS))
                if weights not in fused:
                    fused[weights] = fused_capture(members, weights, float(floor))
                seconds = fused[weights]
            if setting["track_high"] is not None and setting["track_high"] <= setting["track_min_score"]:
                continue
            if setting["track_min_score"] < float(floor):
                raise SystemExit(f"--capture-floor {floor} is above the grid's floor {setting['track_min_score']}")
            knobs = {k: v for k, v in setting.items() if k != "fuse_weights"}
            results = [replay(sec, truth, knobs) for sec, truth in zip(seconds, truths, strict=True)]
            overall = mot_summary([a for a, _ in results], names)["OVERALL"]
            rows.append({"detector": detector, **setting, **overall,
                         "line_abs_error": sum(e for _, (e, _) in results),
                         "true_crossings": sum(n for _, (_, n) in results)})
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.tracking_sweep", description=__doc__.split("\n\n")[0])
    p.add_argument("--set", dest="root", type=Path, default=Path("data/trackset"))
    p.add_argument("--split", choices=("val", "train", "val+train"), default="val",
                   help="the clips replayed (settings are chosen on val, and since round 5 on val and train)")
    p.add_argument("--cache", type=Path, default=Path("data/trackcache"), help="recorded detections (JSON)")
    p.add_argument("--detector", action="append", choices=DETECTORS, help="default: all of them")
    p.add_argument("--grid", choices=tuple(GRIDS), default="round2", help="the settings swept (default round2)")
    p.add_argument("--capture-floor", default=CAPTURE_FLOOR, metavar="SCORE",
                   help=f"the lowest box score recorded (default {CAPTURE_FLOOR}); a grid may not go below it")
    p.add_argument("--json", type=Path, metavar="PATH")
    a = p.parse_args(argv)
    grid = GRIDS[a.grid]
    rows = sweep(a.root, a.split, a.cache, tuple(a.detector or DETECTORS), grid, a.capture_floor)
    rows.sort(key=lambda r: (-r["idf1"], r["line_abs_error"]))
    for r in rows[:15]:
        print(json.dumps({k: r[k] for k in (*grid, "detector", "idf1", "mota", "num_switches", "precision",
                                             "recall", "line_abs_error", "true_crossings")}))
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps({"split": a.split, "grid": grid, "rows": rows,
                                      "command": "python -m benchmarks.tracking_sweep "
                                      + " ".join(argv if argv is not None else sys.argv[1:])}, indent=0) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
