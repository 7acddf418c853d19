"""Two detectors as one: SSD-MobileNetV2 and NanoDet on the same frame, their boxes merged by weighted box
fusion (Solovyev et al., "Weighted boxes fusion", 2021), for tracking (docs/tracking.md, Round 6).

SSD is precise but scores an object that is partly out of the picture low; NanoDet finds more (recall 0.88-0.94
on the tracking set) with many false boxes. Fusion keeps a box both see at a high score and one only NanoDet
sees at a third of its score. Per label, every box of both (each score times its detector's weight) is taken
best first and joins the fused box it overlaps most, by IoU above `FUSE_IOU`, or starts one; a fused box is
the score-weighted mean of its members, and its score is the sum over the detectors of each one's best member
score (weighted), divided by the weights' sum. The members run down to low floors, so a box both see weakly
still adds up. (`ensemble-boxes`, the reference implementation, pulls numba and pandas in through its
package `__init__`; the rule is these few lines.)
"""

from __future__ import annotations

import numpy as np

from models.encoders.detector import BatchedDetector, coco_labels
from models.encoders.people import iou

# (detector, weight, the floor it runs at): weights chosen on the tracking set's val and train (docs/tracking.md,
# Round 6); NanoDet's NMS over every cell and class grows with the boxes over its floor, so it stops at 0.05.
MEMBERS: tuple[tuple[str, float, float], ...] = (("ssd-mobilenetv2", 2.0, 0.02), ("nanodet", 1.0, 0.05))
FUSE_IOU = 0.55  # the paper's default


def fuse(per_detector: list[list[dict]], weights: tuple[float, ...], floor: float, min_iou: float = FUSE_IOU) -> list[dict]:
    """One frame's detections from each detector -> the fused detections scoring `floor` and up, best first."""
    out = []
    for label in sorted({d["label"] for dets in per_detector for d in dets}):
        boxes = sorted(((d["score"] * w, m, d["box"]) for m, (dets, w) in enumerate(zip(per_detector, weights,
                                                                                        strict=True))
                        for d in dets if d["label"] == label), key=lambda x: -x[0])
        clusters: list[tuple[list[float], list[tuple[float, int, list[float]]]]] = []
        for score, m, box in boxes:
            overlaps = [iou(fused, box) for fused, _ in clusters]
            best = int(np.argmax(overlaps)) if overlaps else -1
            if best < 0 or overlaps[best] <= min_iou:
                clusters.append((list(box), [(score, m, box)]))
                continue
            members = clusters[best][1]
            members.append((score, m, box))
            s = np.array([x[0] for x in members])
            clusters[best] = ((s[:, None] * np.array([x[2] for x in members])).sum(0) / s.sum()).tolist(), members
        for fused, members in clusters:
            best_of = {}
            for s, m, _ in members:
                best_of[m] = max(best_of.get(m, 0.0), s)
            score = sum(best_of.values()) / sum(weights)
            if score >= floor:
                out.append({"label": label, "score": round(float(score), 3), "box": [round(float(v), 1) for v in fused]})
    out.sort(key=lambda d: -d["score"])
    return out


class FusedDetector(BatchedDetector):
    """SSD-MobileNetV2 and NanoDet fused (MEMBERS' weights); boxes in pixels of the frame."""

    name = "ssd-mobilenetv2+nanodet"

    def __init__(self, members: list[BatchedDetector], conf: float = 0.3):
        """`members`: MEMBERS' detectors, in that order, each built at its floor (`detectors.make_detector`)."""
        super().__init__()
        self.members = members
        self.weights = tuple(w for _, w, _ in MEMBERS)
        self.labels = coco_labels()
        self.conf = conf

    def detect_many(self, frames: list[np.ndarray]) -> list[list[dict]]:
        """Each member on all the frames, then each frame's boxes fused."""
        per_member = [member.detect_many(frames) for member in self.members]
        return [fuse([dets[i] for dets in per_member], self.weights, self.conf) for i in range(len(frames))]
