"""The live view's picture: the key frame of the pipeline's latest analysed second, with that second's own
boxes, pose skeletons and text drawn on it.

The visual stage keeps the JPEG of the frame its detector, pose and faces ran on (`StageConfig.keep_picture`,
on for every live stream), and the sink hands it out with that second's detections (`Sink.picture`). So a box
is always drawn on the picture it was found on, a webcam (one reader only) has a picture too, and the
dashboard opens no second connection to the camera.
"""

from __future__ import annotations

import io

import numpy as np
from PIL import Image, ImageDraw

BOX_COLORS = {"person": "#d62728", "face": "#ff7f0e"}
SKELETON_COLOR = "#17becf"
# MediaPipe pose landmarks joined into a skeleton: shoulders, arms, torso, legs
SKELETON = ((11, 12), (11, 13), (13, 15), (12, 14), (14, 16), (11, 23), (12, 24), (23, 24), (23, 25), (25, 27),
            (24, 26), (26, 28))
MIN_VISIBILITY = 0.3


def analysed_picture(picture: dict) -> Image.Image:
    """`Sink.picture` ({"jpeg", "visual", "text", ...}) drawn: the key frame with its own boxes."""
    frame = np.asarray(Image.open(io.BytesIO(picture["jpeg"])).convert("RGB"))
    return draw_boxes(frame, picture.get("visual"), text=picture.get("text"))


def draw_boxes(frame: np.ndarray, visual: dict | None, text: list[dict] | None = None) -> Image.Image:
    """`frame` with the detections and face boxes of `visual` (in its `frame_size` pixels) scaled onto it, the
    pose skeletons (landmarks in 0-1 of the picture) of the people it tracks, and the text read on screen."""
    image = Image.fromarray(frame)
    if not visual or not visual.get("frame_size"):
        return image
    sx, sy = image.width / visual["frame_size"][0], image.height / visual["frame_size"][1]
    draw = ImageDraw.Draw(image)
    for person in visual.get("pose") or []:
        marks = person.get("landmarks") or []
        for a, b in SKELETON:
            if max(a, b) < len(marks) and min(marks[a][3], marks[b][3]) >= MIN_VISIBILITY:
                draw.line([(marks[a][0] * image.width, marks[a][1] * image.height),
                           (marks[b][0] * image.width, marks[b][1] * image.height)], fill=SKELETON_COLOR, width=3)
    boxes = [(d["label"], d.get("score"), d["box"]) for d in visual.get("detections") or [] if d.get("box")]
    boxes += [("face", None, b) for b in visual.get("face_boxes") or []]
    boxes += [(f'"{r["text"]}"', None, r["box"]) for r in text or [] if r.get("box")]
    for label, score, (x0, y0, x1, y1) in boxes:
        color = BOX_COLORS.get(label, "#1f77b4")
        rect = (x0 * sx, y0 * sy, x1 * sx, y1 * sy)
        draw.rectangle(rect, outline=color, width=2)
        text = f"{label} {score:.2f}" if score is not None else label
        draw.rectangle((rect[0], max(0, rect[1] - 12), rect[0] + 6 * len(text) + 4, rect[1]), fill=color)
        draw.text((rect[0] + 2, max(0, rect[1] - 12)), text, fill="white")
    return image
