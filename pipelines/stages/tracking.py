"""Tracks over the detector's boxes (Roboflow `trackers`: ByteTrack by default), and what they do in zones and at lines.

Runs after the parser on the visual stage's per-frame detections (`visual["frames"]`: every sampled frame when
tracking is on, `--track-fps` of them a second). One stage object per stream (the Ray hosts and the inline
runner keep it with the stream's state), so a stream's tracks, zone occupancy and line sides are its own and
are freed with it. Each second's record gets the tracks seen in it, the crossings and the zone events; the
final record carries every track: id, label, start, end, its box path (at most 4 points a second) and the time
of its best-scored detection (the thumbnail's).
"""

from __future__ import annotations

from collections import deque

import numpy as np

from models.encoders.people import iou
from pipelines.stages.config import DEFAULT_TRACK_FPS, StageConfig
from pipelines.stages.crossings import LineCounter
from pipelines.stages.record import Second
from pipelines.stages.relink import Relinker

PATH_STEP_S = 0.25  # a track's path keeps at most one box per quarter second of the stream clock
STILL_MOVE = 0.03  # a person whose box centre stays within this (of the picture) is still
LYING_ASPECT = 1.2  # a person box this much wider than tall (in pixels) is lying
HELD = 64  # sightings kept of a track that has not moved yet
FORGET_S = 60.0  # a track unseen this long (well past ByteTrack's buffer and the linking) is forgotten: `_forget`
STILL_REPORTED = ("person",)  # reported before they move when lying (the safety cue), or always (track_still_people)


class TrackStage:
    def __init__(self, config: StageConfig):
        self.config = config
        self.reset()

    def reset(self) -> None:
        c = self.config
        self.tracks: dict[int, dict] = {}
        self._anchor: dict[int, tuple[float, float]] = {}  # a track's last bottom-centre point (normalised)
        self._inside: dict[tuple[int, str], float] = {}  # (track, zone) -> time it entered
        self._loitered: set[tuple[int, str]] = set()
        self._still: dict[int, tuple[float, tuple[float, float]]] = {}  # person track -> (still since, where)
        self._first: dict[int, tuple[float, float]] = {}  # unconfirmed track -> box centre when first seen
        self._held: dict[int, list] = {}  # unconfirmed track -> its sightings so far (reported once it moves)
        self._moved: set[int] = set()  # tracks confirmed as moving (or every track with `track_moved` 0)
        self._peak: dict[int, float] = {}  # unconfirmed track -> its best detection score so far
        self._named: set[int] = set()  # ids the tracker has given so far
        self._seen_at: dict[int, float] = {}  # tracker id -> the time of its latest sighting
        self.dropped: dict[str, int] = {}  # tracks left out of the result (a live source's `track_keep`), by label
        # the last frames and their boxes the tracker gave no id (`_backtrack`): the frame a track began on, and
        # the lost-track buffer's length before it
        self._recent: deque[tuple[dict, list]] = deque(maxlen=1 + round(c.track_buffer_s * tracker_fps(c)))
        self._counter = LineCounter(self.config.track_line_hits, self.config.track_line_margin)
        self._relink = Relinker(c.track_relink_s, c.track_relink_reach)
        self._canvas: tuple[float, float] | None = None  # the first frame's size: the tracker's coordinates
        self.tracker = None
        if c.track:
            self.tracker = make_tracker(c)
        self._zones = [(z, _polygon(z.points)) for z in self.config.zones]
        self._lines = [(x, _segment(x)) for x in self.config.lines]

    def reconfigure(self, config: StageConfig) -> None:
        """New zones or lines on a running stream: tracks go on; occupancy of removed zones is forgotten."""
        self.config = config
        self._zones = [(z, _polygon(z.points)) for z in config.zones]
        self._lines = [(x, _segment(x)) for x in config.lines]
        names = {z.name for z in config.zones}
        self._inside = {k: t for k, t in self._inside.items() if k[1] in names}
        self._counter.forget({x.name for x in config.lines})

    def close(self) -> None:
        self.tracks.clear()
        self._held.clear()
        self._first.clear()
        self._peak.clear()
        self._named.clear()
        self._seen_at.clear()
        self.dropped.clear()
        self._recent.clear()
        self._inside.clear()
        self._still.clear()
        self.tracker = None

    def process(self, record: Second, visual: dict | None) -> Second:
        if self.tracker is None or not (visual or {}).get("frames"):
            return record
        seen: dict[int, dict] = {}
        for now in visual["frames"]:
            for frame, tid, label, score, box in self._update(now):
                self._seen_at[tid] = frame["t"]
                if not self._confirmed(frame, tid, label, score, box):
                    continue
                held = self._held.pop(tid, [])  # its sightings before it moved, in order
                first = held[0] if held else (frame["t"], tid, label, score, box)
                rid = self._relink.id_of(tid, first[0], first[4], label)  # a lost track's id, or its own
                for t, _, held_label, held_score, held_box in held:
                    self._follow(record, t, rid, held_label, held_score, held_box)
                seen[rid] = {"id": rid, "label": label, "box": box}
                if label == "person":
                    seen[rid].update(self._stillness(frame, rid, box))
                self._follow(record, frame["t"], rid, label, score, box)
        record.tracked = sorted(seen.values(), key=lambda s: s["id"])
        self._forget(record, visual["frames"][-1]["t"])
        return record

    def _forget(self, record: Second, now: float) -> None:
        """Drop what is kept per track for tracks unseen since `FORGET_S` before `now`, so a camera that runs for
        days holds the state of its recent tracks only (each track's summary stays in `tracks` for the result).
        A track lost while inside a zone leaves it then: a `zone_exit` at its last sighting, marked `lost`."""
        horizon = now - max(FORGET_S, self.config.track_buffer_s + self.config.track_relink_s)
        gone = [tid for tid, t in self._seen_at.items() if t < horizon]
        for tid in gone:
            del self._seen_at[tid]
            for state in (self._held, self._first, self._peak):
                state.pop(tid, None)
            self._moved.discard(tid)
            self._named.discard(tid)
        self._relink.forget(gone)
        for rid in [rid for rid in self._anchor if self.tracks[rid]["end"] < horizon]:
            track = self.tracks[rid]
            del self._anchor[rid]
            self._still.pop(rid, None)
            self._counter.drop(rid)
            for key in [k for k in self._inside if k[0] == rid]:
                since = self._inside.pop(key)
                self._loitered.discard(key)
                record.zone_events.append({"kind": "zone_exit", "zone": key[1], "label": track["label"],
                                           "track_id": rid, "time": track["end"], "lost": True,
                                           "dwell_s": round(track["end"] - since, 3)})
        keep = self.config.track_keep
        if keep is not None and len(self.tracks) > keep:  # the oldest forgotten tracks leave the result
            old = sorted((tr["end"], rid) for rid, tr in self.tracks.items() if rid not in self._anchor)
            for _, rid in old[:len(self.tracks) - keep]:
                label = self.tracks.pop(rid)["label"]
                self.dropped[label] = self.dropped.get(label, 0) + 1

    def _floor(self) -> float:
        return self.config.tracker_scores()[0]

    def _confirmed(self, frame: dict, tid: int, label: str, score: float, box: list[float]) -> bool:
        """Whether track `tid` is reported: once its box centre has moved `track_moved` (share of the picture)
        from where it was first seen, one of its detections has scored `track_confirm_score` and it has been seen
        `track_min_seen` times, it is for good (an object that moved and then parks stays); until then its
        sightings are held (at most `HELD` of them) and reported with it once confirmed. A person lying need not
        move (`STILL_REPORTED`): someone lying still from the first frame must reach the safety monitor; with
        `track_still_people` no person need move (before round 5, and a standing person in a background photo
        was then a track for the whole clip)."""
        if tid in self._moved:
            return True
        c = self.config
        peak = self._peak[tid] = max(self._peak.get(tid, 0.0), score)
        centre = ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)
        first = self._first.setdefault(tid, centre)
        still_ok = label in STILL_REPORTED and (c.track_still_people or _lying(frame, box))
        moved = (c.track_moved <= 0 or still_ok
                 or max(abs(centre[0] - first[0]), abs(centre[1] - first[1])) >= c.track_moved)
        seen = len(self._held.get(tid, ())) + 1 >= c.track_min_seen
        if moved and seen and peak >= c.track_confirm_score:
            self._moved.add(tid)
            self._first.pop(tid, None)
            self._peak.pop(tid, None)
            return True
        self._held.setdefault(tid, []).append((frame["t"], tid, label, score, box))
        del self._held[tid][:-HELD]
        return False

    def _update(self, frame: dict) -> list[tuple[dict, int, str, float, list[float]]]:
        """The tracker's boxes with ids on `frame`, in the picture's 0-1 coordinates: (frame, id, label, score,
        box). A track that gets its id now is given its earlier boxes too (`_backtrack`)."""
        import supervision as sv

        # The tracker follows boxes in the first frame's pixels, so a camera that changes its resolution mid-stream
        # (a new profile, a sub-stream's) keeps its tracks; the boxes leave it in the picture's 0-1 coordinates.
        w, h = self._canvas = self._canvas or tuple(frame["size"])
        sx, sy = w / frame["size"][0], h / frame["size"][1]
        floor, classes = self._floor(), self.config.track_classes
        dets = [d for d in frame["detections"] if d["score"] >= floor and (not classes or d["label"] in classes)]
        xyxy = np.array([d["box"] for d in dets], np.float32).reshape(-1, 4) * np.float32([sx, sy, sx, sy])
        # class_id: people apart from everything else, for the overlap rule below (the trackers ignore it)
        detections = sv.Detections(xyxy=xyxy, confidence=np.array([d["score"] for d in dets], np.float32),
                                   class_id=np.array([d["label"] == "person" for d in dets], int),
                                   data={"label": np.array([d["label"] for d in dets], dtype=object)})
        if self.config.track_nms is not None and len(detections):
            # The detector suppresses overlaps per class only, so one cow may come as a "cow" and a "horse" box (or
            # two "cow" boxes just under its own overlap): the tracker would follow both. One box per object,
            # whatever its label; but a person riding a bicycle or a horse keeps both boxes.
            detections = detections.with_nms(threshold=self.config.track_nms)
        out = self.tracker.update(detections)
        found, loose = [], []
        for i in range(len(out)):
            tid = int(out.tracker_id[i]) if out.tracker_id is not None else -1
            x0, y0, x1, y1 = (float(v) for v in out.xyxy[i])
            box = [round(x0 / w, 4), round(y0 / h, 4), round(x1 / w, 4), round(y1 / h, 4)]
            score = float(out.confidence[i]) if out.confidence is not None else 0.0
            label = str(out.data["label"][i])
            if tid < 0:
                loose.append((score, box))
                continue
            if tid not in self._named:
                self._named.add(tid)
                found.extend(self._backtrack(tid, label, box))
            found.append((frame, tid, label, score, box))
        self._recent.append((frame, loose))
        return found

    def _backtrack(self, tid: int, label: str, box: list[float]) -> list[tuple[dict, int, str, float, list[float]]]:
        """Track `tid`'s boxes on the frames before it got its id, oldest first. `trackers` gives an id only on
        a track's second sighting and returns its first box without one; and an object coming into the picture
        scores low until enough of it shows, so ByteTrack begins its track late. Walking back frame by frame
        (the lost-track buffer's length before the first box) through the boxes the tracker left without an id,
        each step takes the box that overlaps the last one most, by at least the matching IoU (ByteTrack's own
        rule, run backwards), and stops at the first frame without one. The boxes keep their scores and take
        the track's label; a box taken is no one else's."""
        out, last = [], box
        for frame, loose in reversed(self._recent):
            overlaps = [iou(last, b) for _, b in loose]
            best = int(np.argmax(overlaps)) if overlaps else -1
            if best < 0 or overlaps[best] < self.config.track_match:
                break
            score, last = loose.pop(best)
            out.append((frame, tid, label, score, last))
        return out[::-1]

    def _stillness(self, frame: dict, tid: int, box: list[float]) -> dict:
        """The safety monitor's stillness cue for a person track: how long its box centre has stayed within
        `STILL_MOVE` (of the picture) of where it settled, and whether the box is wider than tall (lying)."""
        t = frame["t"]
        centre = ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)
        since, where = self._still.get(tid, (t, centre))
        if max(abs(centre[0] - where[0]), abs(centre[1] - where[1])) > STILL_MOVE:
            since, where = t, centre
        self._still[tid] = (since, where)
        return {"still_s": round(t - since, 3), "lying": _lying(frame, box)}

    def _follow(self, record: Second, t: float, tid: int, label: str, score: float, box: list[float]) -> None:
        track = self.tracks.get(tid)
        if track is None:
            track = self.tracks[tid] = {"id": tid, "label": label, "start": round(t, 3), "end": round(t, 3),
                                        "path": [], "best_time": round(t, 3), "_best": -1.0}
        track["end"] = round(t, 3)
        self._relink.seen(tid, t, box, label)
        if not track["path"] or int(t / PATH_STEP_S) > int(track["path"][-1][0] / PATH_STEP_S):  # one per slot
            track["path"].append([round(t, 3), *box])
        if score > track["_best"]:
            track["_best"], track["best_time"] = score, round(t, 3)
        from shapely.geometry import Point

        point = ((box[0] + box[2]) / 2, box[3])  # bottom centre: where the object stands
        before = self._anchor.get(tid)
        self._anchor[tid] = point
        base = {"label": label, "track_id": tid, "time": round(t, 3)}
        record.crossings.extend(self._counter.step(self._lines, tid, before, point, base))
        for zone, polygon in self._zones:
            key, inside = (tid, zone.name), polygon.covers(Point(point))  # the edge counts as in
            if inside and key not in self._inside:
                self._inside[key] = t
                record.zone_events.append({"kind": "zone_enter", "zone": zone.name, **base})
            elif not inside and key in self._inside:
                since = self._inside.pop(key)
                self._loitered.discard(key)
                record.zone_events.append({"kind": "zone_exit", "zone": zone.name, **base,
                                           "dwell_s": round(t - since, 3)})
            elif inside and key not in self._loitered and t - self._inside[key] >= self.config.loiter_s:
                self._loitered.add(key)
                record.zone_events.append({"kind": "loiter", "zone": zone.name, **base,
                                           "dwell_s": round(t - self._inside[key], 3)})

    def finish(self, record: Second) -> Second:
        c = self.config
        step = max(1.0 / tracker_fps(c), PATH_STEP_S)
        record.tracks = []
        for tr in sorted(self.tracks.values(), key=lambda tr: tr["start"]):
            track = {k: v for k, v in tr.items() if not k.startswith("_")}
            if c.track_fill:
                track["path"], track["filled"] = filled_path(tr["path"], step, c.track_buffer_s)
            record.tracks.append(track)
        record.tracks_dropped = dict(self.dropped)
        return record


def filled_path(path: list[list[float]], step_s: float, max_gap_s: float) -> tuple[list[list[float]], int]:
    """A track's path with the samples it missed between two of its own sightings filled in, one box every
    `step_s` on the straight line between them, where the gap is at most `max_gap_s` (the tracker's lost-track
    buffer): the detector lost the object there, but the tracker found it again under the same id, so it was
    there all along (ByteTrack's own offline step). Returns (path, points added)."""
    out: list[list[float]] = []
    for point in path:
        if out:
            gap = point[0] - out[-1][0]
            missed = int(round(gap / step_s)) - 1
            if 0 < missed and gap <= max_gap_s + step_s / 2:
                a, b = np.asarray(out[-1]), np.asarray(point)
                for k in range(1, missed + 1):
                    out.append([round(float(v), 4) for v in a + (b - a) * k / (missed + 1)])
        out.append(point)
    return out, len(out) - len(path)


def _lying(frame: dict, box: list[float]) -> bool:
    """Whether a person's box (0-1 coordinates) is wider than tall in pixels, by `LYING_ASPECT`."""
    w, h = frame["size"]
    return bool((box[2] - box[0]) * w > LYING_ASPECT * (box[3] - box[1]) * h)


def tracker_fps(c: StageConfig) -> float:
    """Detections a second the tracker gets (`--track-fps`, else the default), at least 1."""
    return max(c.track_fps or DEFAULT_TRACK_FPS, 1.0)


def make_tracker(c: StageConfig):
    """The `trackers` 2.6.1 tracker named by `track_tracker` with the stage's knobs: ByteTrack (the default),
    OC-SORT, C-BIoU (buffered IoU, for large steps between samples) or BoT-SORT without camera-motion
    compensation (a still camera; the stage has no pixels). Their own association thresholds stay as shipped
    except ByteTrack's and OC-SORT's matching IoU (`track_match`)."""
    import trackers

    fps = tracker_fps(c)
    high = c.tracker_scores()[1]  # at least the floor
    # `trackers` counts the lost-track buffer in frames at 30 fps, whatever `frame_rate` is (before session 28 it
    # was given frames at `fps`: the "2 s" kept a lost track 0.27 s)
    common = {"frame_rate": fps, "lost_track_buffer": max(1, int(round(c.track_buffer_s * 30))),
              "minimum_consecutive_frames": max(1, int(c.track_min_hits)), "high_conf_det_threshold": high}
    if c.track_tracker == "ocsort":
        return trackers.OCSORTTracker(**common, minimum_iou_threshold=c.track_match)
    if c.track_tracker == "cbiou":
        return trackers.CBIoUTracker(**common, track_activation_threshold=high)
    if c.track_tracker == "botsort":
        return trackers.BoTSORTTracker(**common, track_activation_threshold=high, enable_cmc=False)
    return trackers.ByteTrackTracker(**common, track_activation_threshold=high, minimum_iou_threshold=c.track_match)


def _polygon(points):
    from shapely.geometry import Polygon

    return Polygon(points)


def _segment(line):
    from shapely.geometry import LineString

    return LineString([line.start, line.end])
