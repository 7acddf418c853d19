"""The stage graph, declared once and run by both runners (Ray actors in `actors.py`, inline in `inline.py`).

Every second, speech, audio and visual read the segment; the parser fills the second's record from their
outputs; grounding (only with queries or an index) and safety add to the record; the sink takes it. At the
end of the stream each node with a `finish` closes what it holds, in the same order, which yields the final
record. A runner only decides how a call is made (an actor method call with ObjectRefs, or a plain call).
"""

from __future__ import annotations

import importlib
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
    optional: bool = False  # present only when its config is `enabled`


GRAPH: tuple[Node, ...] = (
    Node("speech", "pipelines.stages.speech:SpeechStage", "stages", ("segment",), "speech", finish=()),
    Node("audio", "pipelines.stages.audio:AudioStage", "stages", ("segment",), "audio"),
    Node("visual", "pipelines.stages.visual:VisualStage", "stages", ("segment",), "visual"),
    Node("parser", "pipelines.stages.parser:ParserStage", "stages", ("record", "speech", "audio", "visual"),
         "record", finish=("speech",)),
    Node("grounding", "pipelines.stages.grounding:GroundingStage", "grounding", ("record", "audio", "visual"),
         "record", finish=("record",), optional=True),
    Node("safety", "pipelines.stages.safety:SafetyStage", "stages", ("record",), "record", finish=("record",)),
)

Call = Callable[[Node, str, list], Any]  # (node, "process" or "finish", arguments) -> result or its handle


def nodes(options: AnalyzeOptions) -> list[Node]:
    """The graph's nodes that run under `options`."""
    return [n for n in GRAPH if not n.optional or getattr(options, n.config).enabled]


def node_config(node: Node, options: AnalyzeOptions):
    return getattr(options, node.config)


def build_stage(node: Node, config) -> Any:
    """A fresh stage object for `node` from its config."""
    module, cls = node.stage.split(":")
    return getattr(importlib.import_module(module), cls)(config)


def step(graph: list[Node], call: Call, segment, record) -> Any:
    """Run one second through the graph; returns the record (or the runner's handle on it)."""
    values = {"segment": segment, "record": record}
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
