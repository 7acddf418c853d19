"""The tracking stage on the labelled tracking set: MOTA, IDF1, ID switches (py-motmetrics) and line-count error.

    python -m benchmarks.tracking --build --out data/trackset
    python -m benchmarks.tracking --set data/trackset --split val --json docs/results/tracking_val.json

Each clip goes through the real pipeline (`pipelines.analyze_inline`, default detector, `--line count=...`,
which turns tracking on at its default 4 samples a second). The result's `tracks[].path` boxes are compared
with the truth at the same frames by motmetrics (IoU distance, a match needs IoU >= 0.5), class-agnostic: a
track is scored by where it is, not by its label. A frame the tracker sampled but where it reported nothing
still counts its true objects as misses. Line-count error: per clip, line and direction, |counted - true|,
summed. `--true-boxes` scores only the tracking stage on the true boxes (no detector run). Tracking ms a frame: the tracking node's time over the sampled frames (the detector's is apart).
One numeric thread (the inline runner pins it).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

from benchmarks._report import save_json

METRICS = ("num_frames", "num_objects", "mota", "idf1", "num_switches", "precision", "recall",
           "num_false_positives", "num_misses", "mostly_tracked", "num_unique_objects")
SAMPLE_S = 0.25  # the tracker's default 4 samples a second


def accumulate(truth: dict, tracks: list[dict]):
    """A motmetrics accumulator of one clip: truth boxes against the tracks' path boxes at the same frames."""
    import motmetrics as mm

    fps, (w, h) = truth["fps"], truth["size"]
    hyps: dict[int, list[tuple[int, list[float]]]] = {}
    for track in tracks:
        for t, x0, y0, x1, y1 in track["path"]:
            f = int(round(t * fps))
            if 0 <= f < len(truth["frames"]):
                hyps.setdefault(f, []).append((track["id"], [x0 * w, y0 * h, (x1 - x0) * w, (y1 - y0) * h]))
    step = int(round(SAMPLE_S * fps))
    slots = {f // step for f in hyps}
    frames = sorted(set(hyps) | {f for f in range(0, len(truth["frames"]), step) if f // step not in slots})
    acc = mm.MOTAccumulator(auto_id=False)
    for f in frames:
        objs = truth["frames"][f]
        gt = np.array([[x0, y0, x1 - x0, y1 - y0] for _, x0, y0, x1, y1 in objs], float).reshape(-1, 4)
        found = hyps.get(f, [])
        hb = np.array([b for _, b in found], float).reshape(-1, 4)
        acc.update([o[0] for o in objs], [i for i, _ in found], iou_distance(gt, hb), frameid=f)
    return acc


def iou_distance(objs, hyps, max_distance: float = 0.5):
    """motmetrics' `iou_matrix` (1 - IoU, NaN beyond `max_distance`: no match below IoU 0.5) on float arrays;
    1.4.0's own calls `np.asfarray`, which NumPy 2 removed, so this calls its `boxiou` directly."""
    import motmetrics as mm

    objs, hyps = np.asarray(objs, np.float64).reshape(-1, 4), np.asarray(hyps, np.float64).reshape(-1, 4)
    if objs.size == 0 or hyps.size == 0:
        return np.empty((0, 0))
    dist = 1 - mm.distances.boxiou(objs[:, None], hyps[None, :])
    return np.where(dist > max_distance, np.nan, dist)


def mot_summary(accs: list, names: list[str]) -> dict[str, dict]:
    """motmetrics' figures per clip and over all of them ("overall")."""
    import motmetrics as mm

    frame = mm.metrics.create().compute_many(accs, metrics=list(METRICS), names=names, generate_overall=True)
    return {name: {k: _plain(row[k]) for k in METRICS} for name, row in frame.iterrows()}


def _plain(value) -> float | int:
    value = float(value)
    return int(value) if value.is_integer() else round(value, 4)


def line_errors(truth: dict, crossings: list[dict]) -> tuple[int, int]:
    """(sum over lines and directions of |counted - true|, true crossings) for one clip."""
    counted = Counter((c["line"], c["direction"]) for c in crossings)
    want = {(line, d): n for line, per in truth["crossings"].items() for d, n in per.items()}
    keys = set(counted) | set(want)
    return sum(abs(counted.get(k, 0) - want.get(k, 0)) for k in keys), sum(want.values())


def options(line: str, flags: list[str] | None = None):
    """The pipeline's options for a clip: tracking on through the counting line, speech, sounds, OCR and the
    safety monitor off (they do not feed the tracker), plus `flags` (the analysis flags under test)."""
    from app.services.settings import add_analysis_flags, analysis_options

    p = argparse.ArgumentParser()
    add_analysis_flags(p)
    return analysis_options(p.parse_args(["--no-asr", "--no-tags", "--no-safety", "--no-ocr", "--line", line,
                                          *(flags or [])]))


def analyse(clip: Path, line: str, flags: list[str] | None = None) -> dict:
    """The pipeline's result for one clip."""
    from pipelines import analyze_inline

    return analyze_inline(str(clip), options(line, flags))


def track_truth(truth: dict, flags: list[str] | None = None) -> dict:
    """The tracking stage alone on the true boxes at its sampling rate (score 1, the true class), under the
    analysis `flags`: what the tracker and line logic lose with a perfect detector. Returns {"tracks",
    "crossings"} like the result."""
    from pipelines.stages.record import Second
    from pipelines.stages.tracking import TrackStage

    stage, fps = TrackStage(options(truth["line"], flags).stages), truth["fps"]
    classes = {o["id"]: o["coco_class"] for o in truth["objects"]}
    step = int(round(SAMPLE_S * fps))
    crossings = []
    for second in range(int(np.ceil(len(truth["frames"]) / fps))):
        frames = [{"t": f / fps, "size": truth["size"],
                   "detections": [{"box": b[1:], "score": 1.0, "label": classes[b[0]]} for b in truth["frames"][f]]}
                  for f in range(second * fps, min((second + 1) * fps, len(truth["frames"])), step)]
        crossings += stage.process(Second(index=second, start=second, end=second + 1), {"frames": frames}).crossings
    return {"tracks": stage.finish(Second.closing()).tracks, "crossings": crossings}


def _truths(root: Path, split: str, limit: int | None) -> list[Path]:
    truths = sorted((root / "truth").glob(f"{split}*.json"))[:limit]
    if not truths:
        raise FileNotFoundError(f"no {split} clips under {root}: python -m benchmarks.tracking --build --out {root}")
    return truths


def true_boxes_row(root: Path, split: str, limit: int | None = None, flags: list[str] | None = None) -> dict:
    """The split's overall row of the tracking stage on the true boxes (`track_truth`), no detector run."""
    accs, names, errors, true_n = [], [], 0, 0
    for path in _truths(root, split, limit):
        truth = json.loads(path.read_text())
        ideal = track_truth(truth, flags)
        accs.append(accumulate(truth, ideal["tracks"]))
        names.append(path.stem)
        err, n = line_errors(truth, ideal["crossings"])
        errors, true_n = errors + err, true_n + n
    return {**mot_summary(accs, names)["OVERALL"], "line_abs_error": errors, "true_crossings": true_n}


def evaluate(root: Path, split: str, limit: int | None = None, flags: list[str] | None = None) -> dict:
    """Every clip of `split` through the pipeline and motmetrics; per-clip rows and the split's overall row."""
    truths = _truths(root, split, limit)
    accs, names, clips = [], [], {}
    for path in truths:
        truth = json.loads(path.read_text())
        started = time.perf_counter()
        result = analyse(root / truth["clip"], truth["line"], flags)
        wall = time.perf_counter() - started
        acc = accumulate(truth, result.get("tracks", []))
        accs.append(acc)
        names.append(path.stem)
        err, true_n = line_errors(truth, result.get("crossings", []))
        sampled = len(acc.events.index.get_level_values(0).unique())
        stages = result["timings"]["stages"]
        clips[path.stem] = {"objects": len(truth["objects"]), "classes": [o["coco_class"] for o in truth["objects"]],
                            "tracks": len(result.get("tracks", [])), "line_abs_error": err, "true_crossings": true_n,
                            "counted": len(result.get("crossings", [])), "sampled_frames": sampled,
                            "tracking_ms": 1000 * stages.get("tracking_s", 0.0) / max(sampled, 1),
                            "detector_ms": 1000 * result["timings"]["stages_detail"]["visual"]["detector_s"]
                            / max(sampled, 1), "wall_s": round(wall, 2)}
    mot = mot_summary(accs, names)
    for name, row in clips.items():
        row.update(mot[name])
    rows = clips.values()
    sampled = sum(c["sampled_frames"] for c in rows)
    overall = {**mot["OVERALL"], "clips": len(clips), "line_abs_error": sum(c["line_abs_error"] for c in rows),
               "true_crossings": sum(c["true_crossings"] for c in rows),
               "tracking_ms": sum(c["tracking_ms"] * c["sampled_frames"] for c in rows) / sampled,
               "detector_ms": sum(c["detector_ms"] * c["sampled_frames"] for c in rows) / sampled}
    for row in [*rows, overall]:
        row["tracking_ms"], row["detector_ms"] = round(row["tracking_ms"], 3), round(row["detector_ms"], 1)
    true_boxes = true_boxes_row(root, split, limit, flags)
    return {"split": split, "flags": flags or [], "set": json.loads((root / "trackset.json").read_text()), "overall": overall,
            "true_boxes": true_boxes, "clips": clips}


def table(report: dict) -> str:
    """The split's rows as fixed-width text: one per clip and the overall row."""
    head = (f"{'clip':9} {'obj':>3} {'trk':>3} {'MOTA':>6} {'IDF1':>6} {'IDsw':>4} {'prec':>5} {'rec':>5} "
            f"{'line err':>8} {'track ms':>8} {'det ms':>6}")
    lines = [f"split {report['split']}", head]
    rows = [*report["clips"].items(), ("overall", report["overall"]), ("trueboxes", report["true_boxes"])]
    for name, r in rows:
        ms = f"{r['tracking_ms']:>8.3f} {r['detector_ms']:>6.1f}" if "tracking_ms" in r else ""
        lines.append(f"{name:9} {r.get('objects', r['num_unique_objects']):>3} {r.get('tracks', ''):>3} "
                     f"{r['mota']:>6.3f} {r['idf1']:>6.3f} {r['num_switches']:>4} {r['precision']:>5.3f} "
                     f"{r['recall']:>5.3f} {r['line_abs_error']:>3}/{r['true_crossings']:<4} {ms}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.tracking", description=__doc__.split("\n\n")[0])
    p.add_argument("--build", action="store_true", help="build the labelled tracking set first")
    p.add_argument("--out", "--set", dest="root", type=Path, default=Path("data/trackset"),
                   help="the set's folder (default data/trackset)")
    p.add_argument("--seed", type=int, default=0, help="the set's random seed (with --build)")
    p.add_argument("--split", choices=("val", "train", "test"),
                   help="score this split (val and train for choosing, test once)")
    p.add_argument("--limit", type=int, help="only the first N clips of the split")
    p.add_argument("--json", type=Path, metavar="PATH", help="write the results here")
    p.add_argument("--flags", default="", help="analysis flags for the pipeline, e.g. '--detector nanodet'")
    p.add_argument("--true-boxes", action="store_true", help="only the true-boxes row (no detector run), printed")
    a = p.parse_args(argv)
    if not a.build and not a.split:
        p.error("give --build, --split or both")
    if a.build:
        from training.perception.trackset import build

        summary = build(a.root, a.seed)
        print(json.dumps(summary["splits"]))
    if a.split and a.true_boxes:
        try:
            print(json.dumps({"split": a.split, "flags": a.flags, "true_boxes": true_boxes_row(
                a.root, a.split, a.limit, a.flags.split())}))
        except FileNotFoundError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    elif a.split:
        try:
            report = evaluate(a.root, a.split, a.limit, a.flags.split())
        except FileNotFoundError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        report["command"] = "python -m benchmarks.tracking " + " ".join(argv if argv is not None else sys.argv[1:])
        print(table(report))
        save_json(report, a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
