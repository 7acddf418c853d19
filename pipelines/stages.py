"""Per-second processing stages. Each is plain Python so it runs inside a Ray actor (live spine) or
inline in a Ray task (batch) with the same code.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.errors import BadInput
from models.audio.asr import FasterWhisperRecognizer, SpeechRecognizer
from models.audio.vad import RATE, StreamingVAD
from pipelines.events import EventTracker
from pipelines.segment import Segment

# YAMNet labels that duplicate the VAD's speech events or carry no event information.
IGNORED_TAGS = {"Silence", "Speech", "Speech synthesizer", "Narration, monologue", "Conversation",
                "Male speech, man speaking", "Female speech, woman speaking", "Inside, small room"}


def limit_threads(n: int = 1) -> None:
    """One intra-op thread per actor: PyTorch collapses when two threads fight over two busy cores."""
    import torch

    torch.set_num_threads(n)


@dataclass
class StageConfig:
    asr: bool = True
    asr_model: str | None = None
    asr_language: str | None = "en"
    tags: bool = True
    tag_threshold: float = 0.3
    tag_top_k: int = 3
    vad_threshold: float = 0.5
    max_span_s: float = 20.0
    visual: bool = True
    yolo_size: int = 416
    visual_min_score: float = 0.4
    events_model: str = "auto"  # "prefm" (LLP classes), "tags" (AudioSet/COCO labels), "auto": prefm if shipped
    prefm_checkpoint: str | None = None
    prefm_threshold: float = 0.5
    safety: bool = True
    safety_threshold: float | None = None  # None: the monitor's default (see docs/safety.md)
    judge_url: str | None = None
    camera: str = "camera"


class SpeechStage:
    """VAD on every second; Whisper on each finished speech span (cut at `max_span_s` when it runs long)."""

    def __init__(self, config: StageConfig, recognizer: SpeechRecognizer | None = None):
        self.config = config
        self.vad = StreamingVAD(threshold=config.vad_threshold)
        self.asr = recognizer if recognizer is not None or not config.asr else FasterWhisperRecognizer(
            config.asr_model, language=config.asr_language)
        self._audio = np.zeros(0, np.float32)
        self._audio_t0 = 0.0
        self.asr_seconds = 0.0

    def reset(self) -> None:
        """A new source: forget speech state and buffered audio."""
        self.vad.reset()
        self._audio = self._audio[:0]

    def _keep(self, seg: Segment) -> None:
        expected = self._audio_t0 + self._audio.size / RATE
        if self._audio.size == 0 or abs(seg.start - expected) > 0.05:
            self._audio, self._audio_t0 = seg.audio.copy(), seg.start
        else:
            self._audio = np.concatenate([self._audio, seg.audio])
        horizon = max(self.config.max_span_s + 5.0, 30.0)
        excess = self._audio.size - int(horizon * RATE)
        if excess > 0:
            self._audio = self._audio[excess:]
            self._audio_t0 += excess / RATE

    def _cut(self, start: float, end: float) -> np.ndarray:
        lo = max(0, int(round((start - self._audio_t0) * RATE)))
        hi = max(lo, int(round((end - self._audio_t0) * RATE)))
        return self._audio[lo:hi]

    def _transcribe(self, start: float, end: float) -> list[dict]:
        if self.asr is None:
            return []
        t0 = time.perf_counter()
        segs = self.asr.transcribe(self._cut(start, end), max(start, self._audio_t0))
        self.asr_seconds += time.perf_counter() - t0
        return [s.to_dict() for s in segs]

    def process(self, seg: Segment) -> dict:
        out = {"index": seg.index, "speech_prob": 0.0, "spans": [], "transcript": []}
        if seg.audio is None:
            return out
        self._keep(seg)
        spans, probs = self.vad.feed(seg.audio, seg.start)
        out["speech_prob"] = round(max(probs), 3) if probs else 0.0
        for span in spans:
            out["spans"].append([round(span.start, 2), round(span.end, 2)])
            out["transcript"].extend(self._transcribe(span.start, span.end))
        since = self.vad.open_since
        if since is not None and seg.end - since >= self.config.max_span_s:
            out["transcript"].extend(self._transcribe(since, seg.end))
            self.vad.split_open_span(seg.end)  # the rest of this long span is transcribed as a new piece
        return out

    def finish(self) -> dict:
        out = {"index": None, "speech_prob": 0.0, "spans": [], "transcript": []}
        span = self.vad.close()
        if span is not None:
            out["spans"].append([round(span.start, 2), round(span.end, 2)])
            out["transcript"].extend(self._transcribe(span.start, span.end))
        return out


class AudioStage:
    """What one second sounds like: AudioSet tags, log-mel statistics, speech activity, and its feature vector."""

    def __init__(self, config: StageConfig):
        from models.encoders.audio_features import AudioFeatureConfig, AudioFeatures

        self.config = config
        self.features = AudioFeatures(AudioFeatureConfig(tags=config.tags, tag_top_k=8, tag_min_prob=0.05))

    def reset(self) -> None:
        self.features.reset()

    def process(self, seg: Segment) -> dict:
        result = self.features.analyze(seg.audio, seg.start) if seg.audio is not None else None
        readable = self.features.readable(result) or {}
        return {"index": seg.index, "tags": readable.get("audio_tags", {}), "level_db": readable.get("level_db"),
                "vector": self.features.vector(result), "available": result is not None}


class VisualStage:
    """What one second shows: objects (YOLOv3-tiny), people and pose, faces, motion, cuts, camera trouble."""

    def __init__(self, config: StageConfig):
        import os

        os.environ.setdefault("GLOG_minloglevel", "2")  # MediaPipe's C++ logging would flood the terminal
        from models.encoders.visual import VisualAnalyzer, VisualConfig

        self.config = config
        self.analyzer = VisualAnalyzer(VisualConfig(yolo_size=config.yolo_size)) if config.visual else None

    def reset(self) -> None:
        if self.analyzer is not None:
            self.analyzer.reset()

    def process(self, seg: Segment) -> dict:
        if self.analyzer is None or not seg.frames:
            return {"index": seg.index, "visual": None, "vector": None, "available": False}
        result = self.analyzer.analyze(seg.frames, seg.frame_times)
        return {"index": seg.index, "visual": self.analyzer.readable(result), "vector": self.analyzer.vector(result),
                "available": True}


PREFM_CHECKPOINT = Path(__file__).resolve().parents[1] / "models" / "prefm" / "checkpoints" / "embedded_llp.pt"


def prefm_checkpoint(config: StageConfig) -> Path | None:
    """The PreFM checkpoint the parser should use, or None for tag-based events; BadInput if asked for and missing."""
    path = Path(config.prefm_checkpoint) if config.prefm_checkpoint else PREFM_CHECKPOINT
    if config.events_model == "tags":
        return None
    if not path.is_file():
        if config.events_model == "prefm" or config.prefm_checkpoint:
            raise BadInput(f"no PreFM checkpoint at {path}: train one with `foresight train prefm` or use --events tags")
        return None
    return path


class ParserStage:
    """Turns per-second stage outputs into events.

    With a PreFM checkpoint (the default when one is shipped) events are PreFM's online LLP-class audio, visual
    and audio-visual events, with the model's anticipation of the next seconds; otherwise sound tags and
    detected objects are merged into events. Speech spans always come from the VAD.
    """

    def __init__(self, config: StageConfig):
        self.config = config
        self.tracker = EventTracker(max_gap=1)
        self.prefm = None
        path = prefm_checkpoint(config)
        if path is not None:
            from models.prefm.online import OnlineParser, load_checkpoint

            model, _, _ = load_checkpoint(path)
            self.prefm = OnlineParser(model, threshold=config.prefm_threshold)
        self.t0: float | None = None

    def _labels(self, tags: dict[str, float], visual: dict | None) -> dict[tuple[str, str], float]:
        kept = [(name, p) for name, p in tags.items() if name not in IGNORED_TAGS and p >= self.config.tag_threshold]
        kept.sort(key=lambda x: -x[1])
        labels = {(name, "audio"): p for name, p in kept[: self.config.tag_top_k]}
        best: dict[str, float] = {}
        for det in (visual or {}).get("detections", []):
            best[det["label"]] = max(best.get(det["label"], 0.0), float(det["score"]))
        if (visual or {}).get("faces"):
            best["person"] = max(best.get("person", 0.0), 0.5)  # a face is a person even when YOLO misses it
        for name, score in best.items():
            if score >= self.config.visual_min_score or name == "person":
                labels[(name.capitalize(), "visual")] = round(score, 3)
        return labels

    def _prefm_step(self, seg_meta: dict, audio: dict, visual: dict | None) -> tuple[list[dict], dict]:
        """One PreFM step (zero vectors for seconds a live gap lost); events and anticipation on the stream clock."""
        c = self.prefm.config
        if self.t0 is None:
            self.t0 = float(seg_meta["start"])
        target = int(round(seg_meta["start"] - self.t0))
        zeros_a, zeros_v = np.zeros(c.audio_dim, np.float32), np.zeros(c.visual_dim, np.float32)
        events: list[dict] = []
        while self.prefm.t < target:
            events += self.prefm.step(zeros_a, zeros_v).events
        a = audio.get("vector") if audio.get("available") else None
        v = (visual or {}).get("vector") if (visual or {}).get("available") else None
        out = self.prefm.step(zeros_a if a is None else a, zeros_v if v is None else v)
        events += out.events
        names = c.class_names or []
        expected = []
        for mod, probs in out.future.items():  # the most likely labels over the next Lf seconds
            peak = probs.max(axis=0)
            expected += [(float(peak[i]), f"{names[i]} ({mod})") for i in np.flatnonzero(peak >= self.config.prefm_threshold)]
        anticipation = {name: round(p, 3) for p, name in sorted(expected, reverse=True)[:5]}
        return [self._shift(e) for e in events], anticipation

    def _shift(self, event: dict) -> dict:
        return {**event, "start": round(event["start"] + self.t0, 2), "end": round(event["end"] + self.t0, 2)}

    def process(self, seg_meta: dict, speech: dict, audio: dict, visual: dict | None = None) -> dict:
        vis = (visual or {}).get("visual")
        anticipation: dict = {}
        if self.prefm is not None:
            closed_dicts, anticipation = self._prefm_step(seg_meta, audio, visual)
            closed = []
        else:
            closed_dicts = []
            closed = self.tracker.update(seg_meta["start"], seg_meta["end"], self._labels(audio.get("tags", {}), vis))
        if self.prefm is None:  # PreFM has its own Speech class; the VAD's spans then only drive ASR
            for a, b in speech["spans"]:
                closed.append(self.tracker.add_span("Speech", "audio", a, b, max(speech["speech_prob"], 0.5)))
        active = [e.to_dict() for e in self.tracker.open.values()]
        if self.prefm is not None:
            active += [self._shift(e) for e in self.prefm.merger.open_events()]
        return {**seg_meta, "speech_prob": speech["speech_prob"], "tags": audio.get("tags", {}),
                "level_db": audio.get("level_db"), "visual": vis,
                "events_closed": closed_dicts + [e.to_dict() for e in closed], "events_active": active,
                "anticipation": anticipation, "transcript": speech["transcript"]}

    def finish(self, speech: dict) -> dict:
        closed = self.tracker.finish()
        prefm_events = [self._shift(e) for e in self.prefm.finish()] if self.prefm is not None and self.t0 is not None else []
        if self.prefm is None:
            for a, b in speech["spans"]:
                closed.append(self.tracker.add_span("Speech", "audio", a, b, 0.5))
        return {"index": None, "final": True, "events_closed": prefm_events + [e.to_dict() for e in closed],
                "transcript": speech["transcript"], "tags": {}, "speech_prob": 0.0}


class SafetyStage:
    """Proactive safety: turns each second's signals into the monitor's input and returns its alerts."""

    def __init__(self, config: StageConfig, retriever=None):
        from models.safety.monitor import SafetyConfig, SafetyMonitor

        self.config = config
        cfg = SafetyConfig(judge_url=config.judge_url)
        if config.safety_threshold is not None:
            cfg.threshold = config.safety_threshold
        self.monitor = SafetyMonitor(cfg, retriever=retriever) if config.safety else None
        self.last_time = 0.0

    def signals(self, parsed: dict, visual: dict | None):
        from models.safety.signals import SecondSignals

        words = " ".join(t["text"] for t in parsed.get("transcript", []))
        vis = visual or parsed.get("visual") or {}
        return SecondSignals(
            time=float(parsed["start"]), camera=self.config.camera, audio_tags=dict(parsed.get("tags", {})),
            speech_text=words, events=list(parsed.get("events_active", parsed.get("events_closed", []))),
            persons=vis.get("persons"), objects=dict(vis.get("objects", {})), pose=list(vis.get("pose", [])),
            camera_trouble=vis.get("camera_trouble"))

    def process(self, parsed: dict, visual: dict | None = None) -> dict:
        if self.monitor is None or parsed.get("index") is None:
            return parsed
        self.last_time = max(self.last_time, float(parsed["end"]))
        alerts = self.monitor.update(self.signals(parsed, visual))
        return {**parsed, "alerts": parsed.get("alerts", []) + [a.to_dict() for a in alerts]}

    def finish(self, parsed: dict) -> dict:
        if self.monitor is None:
            return parsed
        alerts = self.monitor.flush(self.last_time)
        return {**parsed, "alerts": parsed.get("alerts", []) + [a.to_dict() for a in alerts]}
