"""The live view's picture: the latest frame of a live source, a few times a second, with the boxes and pose
skeletons of the pipeline's latest analysed second drawn on it.

The picture comes from a second, low-rate connection to the source opened by the dashboard (the pipeline's
frames stay inside its Ray actors), so the boxes are those of the last second the pipeline finished, usually
one to three seconds behind the picture. A device that allows one reader (most webcams) has no picture.
"""

from __future__ import annotations

import threading
import time

import numpy as np
from PIL import Image, ImageDraw

from pipelines.media.sources import open_container, parse_source

BOX_COLORS = {"person": "#d62728", "face": "#ff7f0e"}
SKELETON_COLOR = "#17becf"
# MediaPipe pose landmarks joined into a skeleton: shoulders, arms, torso, legs
SKELETON = ((11, 12), (11, 13), (13, 15), (12, 14), (14, 16), (11, 23), (12, 24), (23, 24), (23, 25), (25, 27),
            (24, 26), (26, 28))
MIN_VISIBILITY = 0.3


class FrameGrabber:
    """A daemon thread that keeps the latest frame of `source` (at most `fps` a second, `width` pixels wide)."""

    def __init__(self, source: str, rtsp_transport: str = "tcp", fps: float = 3.0, width: int = 640):
        self.spec = parse_source(source, rtsp_transport, True)
        self.fps, self.width = fps, width
        self.frame: np.ndarray | None = None
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"picture-{self.spec.name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                container = open_container(self.spec)
            except Exception as exc:  # shown under the picture; try again a little later
                self.error = str(exc)
                self._stop.wait(5.0)
                continue
            try:
                self._read(container)
            except Exception as exc:
                self.error = str(exc)
            finally:
                container.close()
            self._stop.wait(1.0)

    def _read(self, container) -> None:
        if not container.streams.video:
            self.error = "the source has no video"
            self._stop.set()
            return
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        last = 0.0
        for frame in container.decode(stream):
            if self._stop.is_set():
                return
            now = time.monotonic()
            if now - last < 1.0 / self.fps:
                continue
            last = now
            height = max(2, round(frame.height * self.width / frame.width))
            self.frame = frame.to_ndarray(width=self.width, height=height, format="rgb24")
            self.error = None

    def close(self) -> None:
        self._stop.set()


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
