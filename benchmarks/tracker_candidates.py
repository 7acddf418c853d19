"""The tracker candidates on the same box streams: identities kept and milliseconds per update.

Two walkers cross each other on a 4-fps box stream with 20% missed detections and 3-px box noise, at a slow
(12 px/frame) and a fast (35 px/frame) pace. Prints, per tracker, the track ids each walker got (one id each
is right) and the mean update time. Boxes only: the detector is not part of this comparison (see
docs/tracking.md). Run: `python benchmarks/tracker_candidates.py`.
"""

from __future__ import annotations

import time
import warnings

import numpy as np


def scene(speed: float, frames: int = 80, seed: int = 0) -> list[tuple[np.ndarray, list[int]]]:
    rng = np.random.default_rng(seed)
    out = []
    for t in range(frames):
        boxes, who = [], []
        for k, (x0, vx, y) in enumerate([(50, speed, 300), (50 + 2 * speed * frames * 0.5, -speed, 320)]):
            if rng.random() < 0.2:
                continue  # a missed detection
            x = x0 + vx * t
            boxes.append(np.array([x, y, x + 80, y + 200], float) + rng.normal(0, 3, 4))
            who.append(k)
        out.append((np.array(boxes).reshape(-1, 4), who))
    return out


def run(make, speed: float) -> tuple[dict[int, list[int]], float]:
    import supervision as sv

    tracker, ids, spent = make(), {}, 0.0
    stream = scene(speed)
    for boxes, who in stream:
        dets = sv.Detections(xyxy=boxes, confidence=np.full(len(boxes), 0.8), class_id=np.zeros(len(boxes), int))
        t0 = time.perf_counter()
        out = tracker.update_with_detections(dets) if hasattr(tracker, "update_with_detections") else \
            tracker.update(dets)
        spent += time.perf_counter() - t0
        for tid, box in zip(out.tracker_id, out.xyxy, strict=True):
            if len(boxes) and tid is not None and tid >= 0:
                j = int(np.argmin(np.abs(boxes[:, 0] - box[0])))
                ids.setdefault(who[j], set()).add(int(tid))
    return {k: sorted(v) for k, v in sorted(ids.items())}, 1000 * spent / len(stream)


def main() -> None:
    warnings.filterwarnings("ignore")
    from importlib.metadata import version

    import supervision as sv
    import trackers

    tv = version("trackers")
    candidates = {
        f"supervision {sv.__version__} ByteTrack": lambda: sv.ByteTrack(frame_rate=4, lost_track_buffer=8),
        f"trackers {tv} ByteTrackTracker": lambda: trackers.ByteTrackTracker(frame_rate=4),
        f"trackers {tv} OCSORTTracker": lambda: trackers.OCSORTTracker(),
    }
    for speed in (12.0, 35.0):
        for name, make in candidates.items():
            ids, ms = run(make, speed)
            print(f"{speed:>4.0f} px/frame  {name:<36} ids per walker {ids}  {ms:.3f} ms/update")


if __name__ == "__main__":
    main()
