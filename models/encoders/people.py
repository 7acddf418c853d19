"""Who is in the picture: the detector's person boxes (plus faces it missed), and each pose tied to one of them.

The pose landmarker fires on animals and objects (a skeleton on a cat, "lying" on a coffee cup), so a pose is
kept only when its landmarks' bounding box matches a person: a detector person box it overlaps (IoU) or lies
inside (containment), or a face the detector missed whose box holds the pose's nose. The same people give the
second's person count, so `persons`, `objects["person"]` and the postures always agree.
"""

from __future__ import annotations

NOSE = 0
MIN_IOU = 0.3  # a pose box and a person box this alike are one person
MIN_INSIDE = 0.6  # or this much of the pose box lies inside the person box (landmarks are joints: the box is smaller)
MIN_VISIBLE = 0.3  # landmarks below this visibility do not stretch the pose's box


def area(box: list[float]) -> float:
    return max(0.0, box[2] - box[0]) * max(0.0, box[3] - box[1])


def overlap(a: list[float], b: list[float]) -> float:
    """Area of the intersection of two [x0, y0, x1, y1] boxes."""
    return area([max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])])


def iou(a: list[float], b: list[float]) -> float:
    inter = overlap(a, b)
    union = area(a) + area(b) - inter
    return inter / union if union > 0 else 0.0


def inside(a: list[float], b: list[float]) -> float:
    """The fraction of box `a` that lies inside box `b`."""
    return overlap(a, b) / area(a) if area(a) > 0 else 0.0


def pose_box(landmarks: list[list[float]], width: int, height: int) -> list[float]:
    """Pixel box of a pose's landmarks ([x, y, z, visibility], normalised), the visible ones where there are
    at least three, clipped to the frame."""
    seen = [lm for lm in landmarks if lm[3] >= MIN_VISIBLE]
    pts = seen if len(seen) >= 3 else landmarks
    xs, ys = [lm[0] * width for lm in pts], [lm[1] * height for lm in pts]
    return [round(max(0.0, min(xs)), 1), round(max(0.0, min(ys)), 1),
            round(min(float(width), max(xs)), 1), round(min(float(height), max(ys)), 1)]


def people(detections: list[dict], face_boxes: list[list[float]]) -> list[dict]:
    """The people of a frame: each detector person box, then each face that lies in none of them (the detector
    misses people who fill the frame; a face is strong evidence). Each: box, score, source."""
    found = [{"box": list(d["box"]), "score": round(float(d["score"]), 3), "source": "detector"}
             for d in detections if d["label"] == "person"]
    boxes = [p["box"] for p in found]
    for face in face_boxes:
        if not any(inside(face, box) >= 0.5 for box in boxes):
            found.append({"box": list(face), "score": 0.5, "source": "face"})
    return found


def match(poses: list[dict], persons: list[dict], width: int, height: int) -> list[dict]:
    """The poses that belong to a person, each with `person` (its index in `persons`) and `box` (pixels);
    greedy, best match first, at most one pose per person. Poses matching no person are dropped."""
    pairs = []
    for i, pose in enumerate(poses):
        pb = pose_box(pose["landmarks"], width, height)
        for j, person in enumerate(persons):
            box = person["box"]
            if person["source"] == "face":
                nx, ny = pose["landmarks"][NOSE][0] * width, pose["landmarks"][NOSE][1] * height
                grow = 0.1 * max(box[2] - box[0], box[3] - box[1])
                hit = box[0] - grow <= nx <= box[2] + grow and box[1] - grow <= ny <= box[3] + grow
                quality = 1.0 if hit else 0.0
            else:
                alike, held = iou(pb, box), inside(pb, box)
                quality = alike + held if alike >= MIN_IOU or held >= MIN_INSIDE else 0.0
            if quality > 0:
                pairs.append((quality, i, j, pb))
    kept: dict[int, dict] = {}
    taken: set[int] = set()
    for _, i, j, pb in sorted(pairs, key=lambda p: -p[0]):
        if i not in kept and j not in taken:
            kept[i] = {**poses[i], "person": j, "box": pb}
            taken.add(j)
    return [kept[i] for i in sorted(kept)]
