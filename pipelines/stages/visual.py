"""Picture: objects, people and pose, faces, motion, cuts and camera trouble in each second's frames."""

from __future__ import annotations

from pipelines.media.segment import Segment
from pipelines.stages.config import StageConfig


class VisualStage:
    """What one second shows: objects (the chosen detector), people and pose, faces, motion, cuts, camera trouble."""

    def __init__(self, config: StageConfig):
        import os

        os.environ.setdefault("GLOG_minloglevel", "2")  # MediaPipe's C++ logging would flood the terminal
        from models.encoders.visual import VisualAnalyzer, VisualConfig

        self.config = config
        visual = VisualConfig(detector=config.detector, pose_model=config.pose, yolo_size=config.yolo_size,
                              prompt=config.visual_prompt,
                              detect_every_frame=config.track, motion_gate=config.motion_gate,
                              track_floor=config.tracker_scores()[0] if config.track else None,
                              keepalive_s=config.keepalive_s)
        self.analyzer = VisualAnalyzer(visual) if config.visual else None

    def reset(self) -> None:
        if self.analyzer is not None:
            self.analyzer.reset()

    def close(self) -> None:
        """The stream is gone: free its pose tracker (the shared models stay loaded)."""
        if self.analyzer is not None:
            self.analyzer.close()

    def timings(self) -> dict[str, float]:
        """Seconds spent so far in the detector, pose, faces and frame statistics."""
        return dict(self.analyzer.timings) if self.analyzer is not None else {}

    def batch_input(self, seg: Segment):
        """(detector, key frame) for a batch across streams, or None (no frames, or frames this stream's visual
        prompt changes first)."""
        a = self.analyzer
        if a is None or not seg.frames or a.prompt is not None or not a.will_look(seg.frames, seg.frame_times):
            return None
        return a.detector, seg.frames[len(seg.frames) // 2]

    @staticmethod
    def prefetch(inputs: list) -> None:
        """Detect in the streams' key frames in one pass per detector; each stream's call then finds its own."""
        by_detector: dict[int, tuple] = {}
        for detector, frame in inputs:
            by_detector.setdefault(id(detector), (detector, []))[1].append(frame)
        for detector, frames in by_detector.values():
            if len(frames) > 1:
                detector.remember(frames)

    def process(self, seg: Segment) -> dict:
        if self.analyzer is None or not seg.frames:
            return {"index": seg.index, "visual": None, "vector": None, "available": False}
        result = self.analyzer.analyze(seg.frames, seg.frame_times)
        out = {"index": seg.index, "visual": self.analyzer.readable(result), "vector": self.analyzer.vector(result),
               "available": True, "frames": result["_frames"]}
        if self.config.keep_picture:
            out["picture"] = key_frame_jpeg(seg.frames[len(seg.frames) // 2])
        return out


def key_frame_jpeg(rgb, quality: int = 80) -> bytes:
    """The key frame as a JPEG (the one the detector, pose and faces ran on; its pixel size is `frame_size`)."""
    import cv2

    ok, data = cv2.imencode(".jpg", rgb[:, :, ::-1], [cv2.IMWRITE_JPEG_QUALITY, quality])
    return data.tobytes() if ok else b""
