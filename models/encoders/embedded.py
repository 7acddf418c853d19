"""The `embedded` encoder (the default): the offline model stack from installed packages.

Audio: YAMNet probabilities + log-mel statistics + Silero speech activity (`audio_features.py`).
Visual: YOLOv3-tiny counts and scores, pose summary, faces, motion, cuts, camera state, colour layout
(`visual.py`). Both keep cross-second state, so one encoder instance serves one source at a time.
"""

from __future__ import annotations

import numpy as np

from models.encoders.audio_features import AUDIO_DIM, AudioFeatureConfig, AudioFeatures
from models.encoders.base import SecondFeatures
from models.encoders.visual import VISUAL_DIM, VisualAnalyzer, VisualConfig

FORMAT_VERSION = 1


class EmbeddedEncoder:
    name = "embedded"
    audio_dim = AUDIO_DIM
    visual_dim = VISUAL_DIM

    def __init__(self, visual: VisualConfig | None = None, audio: AudioFeatureConfig | None = None,
                 audio_enabled: bool = True, visual_enabled: bool = True):
        self.visual_config = visual or VisualConfig()
        self.audio_config = audio or AudioFeatureConfig()
        self.audio = AudioFeatures(self.audio_config) if audio_enabled else None
        self.visual = VisualAnalyzer(self.visual_config) if visual_enabled else None
        v, a = self.visual_config, self.audio_config
        self.version = (f"embedded-v{FORMAT_VERSION}|a{AUDIO_DIM}|v{VISUAL_DIM}|yolo{v.yolo_size}@{v.yolo_conf}"
                        f"|pose{int(v.pose)}x{v.num_poses}|faces{int(v.faces)}|tags{int(a.tags)}|vad{int(a.vad)}")
        if a.tags and self.audio is not None and self.audio.tagger is not None and self.audio.tagger.model != "w8a8":
            self.version += f"|yamnet-{self.audio.tagger.model}"  # w8a8 keeps the version its caches were made with
        if self.visual is not None and self.visual.prompt is not None:
            self.version += f"|prompt{self.visual.prompt.digest}"
        # The detector's counts and the motion gate change the visual vector: a cache made with YOLOv3-tiny and no
        # gate (the versions before either existed) must not be reused for another detector or a gated encoding.
        if v.detector != "yolov3-tiny":
            self.version += f"|det-{v.detector}"
        if v.pose and v.pose_model != "mediapipe":  # the pose part too: MediaPipe's caches keep their version
            self.version += f"|pose-{v.pose_model}"
        if v.motion_gate is not None:
            # "c": the keep-alive looks only at a picture that changed since the last look (session 26)
            self.version += f"|gate{v.motion_gate:g}x{v.keepalive_s:g}c"

    def reset(self) -> None:
        for part in (self.audio, self.visual):
            if part is not None:
                part.reset()

    def encode_audio(self, audio_1s: np.ndarray | None, start: float | None = None) -> np.ndarray:
        if self.audio is None:
            return np.zeros(AUDIO_DIM, np.float32)
        return self.audio.vector(self.audio.analyze(audio_1s, start))

    def encode_visual(self, frames: list[np.ndarray], times: list[float] | None = None) -> np.ndarray:
        if self.visual is None:
            return np.zeros(VISUAL_DIM, np.float32)
        return self.visual.vector(self.visual.analyze(frames, times))

    def encode_second(self, frames: list[np.ndarray], frame_times: list[float] | None, audio: np.ndarray | None,
                      start: float, index: int = 0) -> SecondFeatures:
        a = self.audio.analyze(audio, start) if self.audio is not None else None
        v = self.visual.analyze(frames, frame_times) if self.visual is not None and frames else None
        detections: dict = {}
        if a is not None:
            detections.update(AudioFeatures.readable(a))
        if v is not None:
            detections.update(VisualAnalyzer.readable(v))
        return SecondFeatures(
            index=index, start=start,
            audio=self.audio.vector(a) if self.audio is not None else np.zeros(AUDIO_DIM, np.float32),
            visual=self.visual.vector(v) if self.visual is not None else np.zeros(VISUAL_DIM, np.float32),
            audio_available=a is not None, visual_available=v is not None, detections=detections)

    def close(self) -> None:
        if self.visual is not None:
            self.visual.close()
