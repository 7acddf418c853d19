"""The live view's picture: the key frame of the pipeline's latest analysed second, with that second's own
boxes, pose skeletons and text drawn on it.

The visual stage keeps the JPEG of the frame its detector, pose and faces ran on (`StageConfig.keep_picture`,
on for every live stream), and the sink hands it out with that second's detections (`Sink.picture`). So a box
is always drawn on the picture it was found on, a webcam (one reader only) has a picture too, and the
dashboard opens no second connection to the camera.
"""

from __future__ import annotations

import base64
import io

import numpy as np
from PIL import Image, ImageDraw

from models.encoders.people import iou as box_iou

BOX_COLORS = {"person": "#d62728", "face": "#ff7f0e"}
TEXT_COLOR = "#2ca02c"  # text read on screen: its own colour, never taken for an object's box
ZONE_COLOR, LINE_COLOR = "#9467bd", "#e377c2"
SAME_TRACK_IOU = 0.3  # a key-frame box is that track's when they overlap this much (same label)
SKELETON_COLOR = "#17becf"
# Pose landmarks joined into a skeleton (shoulders, arms, torso, legs), by the model's number of landmarks:
# MediaPipe's 33 and COCO's 17 (MoveNet multipose) number the same joints differently.
SKELETONS = {33: ((11, 12), (11, 13), (13, 15), (12, 14), (14, 16), (11, 23), (12, 24), (23, 24), (23, 25), (25, 27),
                  (24, 26), (26, 28)),
             17: ((5, 6), (5, 7), (7, 9), (6, 8), (8, 10), (5, 11), (6, 12), (11, 12), (11, 13), (13, 15), (12, 14),
                  (14, 16))}
MIN_VISIBILITY = 0.3


def data_url(image: Image.Image | bytes, quality: int = 85) -> str:
    """The picture as a `data:` URL, which travels inside the page. Handed to `st.image` as bytes, a picture
    becomes a /media/ file that a fragment's rerun deletes while the browser may still be fetching it
    (streamlit#9079: the live view's /media 404s); a data URL has nothing to fetch. JPEG bytes pass as they are."""
    if isinstance(image, Image.Image):
        out = io.BytesIO()
        image.convert("RGB").save(out, format="JPEG", quality=quality)
        image = out.getvalue()
    return "data:image/jpeg;base64," + base64.b64encode(image).decode("ascii")


def analysed_picture(picture: dict, zones: tuple = (), lines: tuple = ()) -> Image.Image:
    """`Sink.picture` ({"jpeg", "visual", "text", "tracks"}) drawn: the key frame with its own boxes, each
    tracked object's id, and the stream's zones and counting lines (`models.zones` specs, 0-1 of the picture)."""
    frame = np.asarray(Image.open(io.BytesIO(picture["jpeg"])).convert("RGB"))
    image = draw_boxes(frame, picture.get("visual"), text=picture.get("text"), tracks=picture.get("tracks"))
    draw_layout(image, zones, lines)
    return image


def draw_layout(image: Image.Image, zones: tuple = (), lines: tuple = ()) -> None:
    """Zone outlines and counting lines with their names, in place."""
    draw = ImageDraw.Draw(image)
    w, h = image.width, image.height
    for zone in zones:
        points = [(x * w, y * h) for x, y in zone.points]
        draw.polygon(points, outline=ZONE_COLOR, width=2)
        draw.text((min(p[0] for p in points) + 4, min(p[1] for p in points) + 2), zone.name, fill=ZONE_COLOR)
    for line in lines:
        a, b = (line.start[0] * w, line.start[1] * h), (line.end[0] * w, line.end[1] * h)
        draw.line([a, b], fill=LINE_COLOR, width=3)
        draw.text(((a[0] + b[0]) / 2 + 4, (a[1] + b[1]) / 2 + 2), line.name, fill=LINE_COLOR)


def track_ids(detections: list[dict], tracks: list[dict] | None) -> list[int | None]:
    """The track id of each key-frame detection: the track of the same label whose box overlaps it most (the
    tracker's boxes are from the second's last sampled frame, the detections from its key frame)."""
    out = []
    for d in detections:
        best, best_iou = None, SAME_TRACK_IOU
        for t in tracks or []:
            if t.get("label") == d.get("label") and d.get("box") and t.get("box"):
                iou = box_iou(d["box"], t["box"])
                if iou >= best_iou:
                    best, best_iou = t["id"], iou
        out.append(best)
    return out


def draw_boxes(frame: np.ndarray, visual: dict | None, text: list[dict] | None = None,
               tracks: list[dict] | None = None) -> Image.Image:
    """`frame` with the detections and face boxes of `visual` (in its `frame_size` pixels) scaled onto it (with
    their track ids, given the second's `tracks`), the pose skeletons (landmarks in 0-1 of the picture) of the
    people it tracks, and the text read on screen."""
    image = Image.fromarray(frame)
    if not visual or not visual.get("frame_size"):
        return image
    sx, sy = image.width / visual["frame_size"][0], image.height / visual["frame_size"][1]
    draw = ImageDraw.Draw(image)
    for person in visual.get("pose") or []:
        marks = person.get("landmarks") or []
        for a, b in SKELETONS.get(len(marks), ()):
            if min(marks[a][3], marks[b][3]) >= MIN_VISIBILITY:
                draw.line([(marks[a][0] * image.width, marks[a][1] * image.height),
                           (marks[b][0] * image.width, marks[b][1] * image.height)], fill=SKELETON_COLOR, width=3)
    found = [d for d in visual.get("detections") or [] if d.get("box")]
    boxes = [(d["label"] + (f" #{tid}" if tid is not None else ""), d.get("score"), d["box"])
             for d, tid in zip(found, track_ids(found, tracks), strict=True)]
    boxes += [("face", None, b) for b in visual.get("face_boxes") or []]
    boxes += [(f'"{r["text"]}"', None, r["box"]) for r in text or [] if r.get("box")]
    for label, score, (x0, y0, x1, y1) in boxes:
        color = TEXT_COLOR if label.startswith('"') else BOX_COLORS.get(label.split(" #")[0], "#1f77b4")
        rect = (x0 * sx, y0 * sy, x1 * sx, y1 * sy)
        draw.rectangle(rect, outline=color, width=2)
        text = f"{label} {score:.2f}" if score is not None else label
        draw.rectangle((rect[0], max(0, rect[1] - 12), rect[0] + 6 * len(text) + 4, rect[1]), fill=color)
        draw.text((rect[0] + 2, max(0, rect[1] - 12)), text, fill="white")
    return image
