"""Foresight's pipeline, in the order data flows: `media` (sources, decoding, 1-s segments, live ingest) ->
`stages` (speech, audio, visual, parser, grounding, safety) -> `spine` (the stage graph and its two runners)
-> `sinks` (result, store, webhooks, exporters). See docs/architecture.md.

The public surface is this module: `analyze` (Ray actors) or `analyze_inline` (this process) return the
result dict; `Pipeline` is a running actor pipeline; the options classes configure them. Names load on first
use, so importing a submodule stays cheap.
"""

from __future__ import annotations

import importlib

__all__ = ["AnalyzeOptions", "BadInput", "GroundingConfig", "Pipeline", "StageConfig", "WebhookConfig",
           "analyze", "analyze_inline"]

_HOME = {
    "AnalyzeOptions": "pipelines.spine.options",
    "BadInput": "models.errors",
    "GroundingConfig": "pipelines.stages.config",
    "Pipeline": "pipelines.spine.pipeline",
    "StageConfig": "pipelines.stages.config",
    "WebhookConfig": "pipelines.sinks.webhooks",
    "analyze": "pipelines.spine.pipeline",
    "analyze_inline": "pipelines.spine.inline",
}


def __getattr__(name: str):
    if name not in _HOME:
        raise AttributeError(f"module 'pipelines' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOME[name]), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
