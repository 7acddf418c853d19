"""Where the tracker's errors are: each true box the tracks miss, by what the detector had there, and each false
box, by the track it belongs to.

    python -m benchmarks.tracking_misses --set data/trackset30 --split train --cache /tmp/trackcache \\
        --capture-floor 0.02 --json docs/results/tracking_errors_train30_round5c.json

It replays `benchmarks.tracking_sweep`'s capture of each clip of `--split` through the real tracking stage under
the shipped defaults (`StageConfig`; `--knob NAME=VALUE` changes one) and sorts every missed true box (motmetrics' MISS) by the best detector box on
that frame: none at IoU 0.3 or more, one at IoU 0.3-0.5 (a loose box), or one at IoU 0.5 and up by its score
band; and by where the miss lies in its object's history (before the object's first match, after its last,
in a gap between two, or never matched), and whether the object touches the picture's left or right edge
(coming in or going out). Each false box (motmetrics' FP) is sorted by its track's label, whether that track
matches a true object anywhere in the clip (a wrong stretch of a true track) or nowhere (a track of its own:
something in the background photo, or a second box on an object), and how far the track moved. It says what the
next round can still win, and where: the detector's boxes or the tracker's use of them. Val and train only:
settings are chosen there.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from benchmarks._report import save_json
from benchmarks.tracking import accumulate
from benchmarks.tracking_sweep import CAPTURE_FLOOR, capture_folder, run_stage, split_truths
from models.encoders.people import iou

BANDS = (0.1, 0.2)  # score bands of a detector box at IoU >= 0.5: below 0.1, 0.1-0.2, 0.2 and up
SETTING_KEYS = ("track_fps", "track_min_score", "track_high", "track_moved", "track_buffer_s", "track_match",
                "track_min_hits", "track_confirm_score", "track_line_hits", "track_fill", "track_nms",
                "track_min_seen", "track_still_people")


def shipped_setting() -> dict:
    """The tracking defaults as a sweep setting (the moving classes, 4 samples a second)."""
    from pipelines.stages.config import StageConfig
    from pipelines.stages.tracking import tracker_fps

    cfg = StageConfig()
    return {**{k: getattr(cfg, k) for k in SETTING_KEYS}, "track_fps": tracker_fps(cfg), "classes": "moving"}


def kind(box: list[float], detections: list[dict]) -> str:
    """What the detector had on a missed true box (pixels): the best overlap, and its score band."""
    best = max(((iou(box, d["box"]), d["score"]) for d in detections), default=(0.0, 0.0))
    if best[0] < 0.3:
        return "no box"
    if best[0] < 0.5:
        return "loose box (IoU 0.3-0.5)"
    band = next((f"< {b}" for b in BANDS if best[1] < b), f">= {BANDS[-1]}")
    return f"box, score {band}"


def errors(truth: dict, seconds: list[dict], setting: dict) -> tuple[Counter, Counter]:
    """The clip's misses, counted by (what the detector had, where in the object's history, edge or inside), and
    its false boxes, by (the track's label, whether it matches an object elsewhere, how far it moved)."""
    tracks, _ = run_stage(seconds, truth, setting)
    acc = accumulate(truth, tracks)
    fps, (w, _h) = truth["fps"], truth["size"]
    raw = {int(round(f["t"] * fps)): f["detections"] for s in seconds for f in s["frames"]}
    events = acc.mot_events.reset_index()
    matched = events[events.Type.isin(["MATCH", "SWITCH", "TRANSFER", "ASCEND", "MIGRATE"])]
    out: Counter = Counter()
    for _, row in events[events.Type == "MISS"].iterrows():
        frame, obj = int(row["FrameId"]), row["OId"]
        box = next(b[1:] for b in truth["frames"][frame] if b[0] == obj)
        frames = matched[matched.OId == obj].FrameId
        before, after = (frames < frame).any(), (frames > frame).any()
        where = ("gap" if before and after else "after its last match" if before
                 else "before its first match" if after else "never matched")
        edge = "at the edge" if box[0] <= 1 or box[2] >= w - 1 else "inside"
        out[(kind(box, raw.get(frame, [])), where, edge)] += 1
    by_id, false = {t["id"]: t for t in tracks}, Counter()
    for hid, n in events[events.Type == "FP"].HId.value_counts().items():
        track = by_id[int(hid)]
        xs = [(p[1] + p[3]) / 2 for p in track["path"]]
        ys = [(p[2] + p[4]) / 2 for p in track["path"]]
        moved = max(max(xs) - min(xs), max(ys) - min(ys))
        elsewhere = "matches an object elsewhere" if (matched.HId == hid).any() else "matches no object"
        false[(track["label"], elsewhere, "moved < 0.1" if moved < 0.1 else "moved >= 0.1")] += int(n)
    return out, false


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.tracking_misses", description=__doc__.split("\n\n")[0])
    p.add_argument("--set", dest="root", type=Path, default=Path("data/trackset"))
    p.add_argument("--cache", type=Path, default=Path("data/trackcache"), help="tracking_sweep's capture")
    p.add_argument("--split", choices=("val", "train", "val+train"), default="val")
    p.add_argument("--detector", default="ssd-mobilenetv2")
    p.add_argument("--capture-floor", default=CAPTURE_FLOOR, metavar="SCORE")
    p.add_argument("--knob", action="append", default=[], metavar="NAME=VALUE",
                   help="replay with this knob changed (e.g. track_still_people=true, track_moved=0.06)")
    p.add_argument("--json", type=Path, metavar="PATH")
    a = p.parse_args(argv)
    folder = capture_folder(a.cache, a.detector, a.capture_floor)
    truths = split_truths(a.root, a.split)
    if not truths:
        p.error(f"{a.root}: no {a.split} clips (build them: foresight train trackset --out {a.root})")
    setting, missed, false = shipped_setting(), Counter(), Counter()
    for knob in a.knob:
        name, _, value = knob.partition("=")
        try:
            value = json.loads(value.lower())  # true / false, or a number (whole numbers stay whole)
        except ValueError:
            name = ""
        if name not in SETTING_KEYS:
            p.error(f"--knob {knob}: not NAME=VALUE with NAME one of {', '.join(SETTING_KEYS)}")
        setting[name] = value
    for path in truths:
        capture = folder / f"{path.stem}.json"
        if not capture.exists():
            p.error(f"{capture}: not captured (run benchmarks.tracking_sweep with the same --cache and "
                    "--capture-floor first)")
        m, f = errors(json.loads(path.read_text()), json.loads(capture.read_text()), setting)
        missed, false = missed + m, false + f
    rows = [{"detector_had": k, "where": w, "edge": e, "misses": n} for (k, w, e), n in sorted(missed.items())]
    false_rows = [{"label": k, "track": w, "moved": e, "false_boxes": n} for (k, w, e), n in false.most_common()]
    for r in rows:
        print(f"{r['misses']:5d}  {r['detector_had']:26s} {r['where']:24s} {r['edge']}")
    print(f"{sum(missed.values()):5d}  missed true boxes\n")
    for r in false_rows:
        print(f"{r['false_boxes']:5d}  {r['label']:12s} {r['track']:30s} {r['moved']}")
    print(f"{sum(false.values()):5d}  false boxes")
    save_json({"split": a.split, "setting": setting, "detector": a.detector, "capture_floor": a.capture_floor,
               "rows": rows, "false_rows": false_rows,
               "command": "python -m benchmarks.tracking_misses " + " ".join(argv if argv is not None
                                                                           else sys.argv[1:])}, a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
