"""The picture models a caller may choose per analysis (`detector`, `pose`): one table for the CLI's flags, the
REST bodies and the dashboard, so every surface checks a name the same way, before any model loads, and refuses
an unknown one listing the names."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from models.encoders.detectors import DEFAULT_DETECTOR, DETECTOR_NAMES, check_detector
from models.encoders.visual_config import DEFAULT_POSE, POSE_NAMES, check_pose
from models.errors import BadInput

if TYPE_CHECKING:
    from pipelines import AnalyzeOptions

# field (StageConfig's, the flag's and the body's name) -> (check, default, the names offered)
MODELS: dict[str, tuple[Callable[[str], str], str, tuple[str, ...]]] = {
    "detector": (check_detector, DEFAULT_DETECTOR, DETECTOR_NAMES),
    "pose": (check_pose, DEFAULT_POSE, POSE_NAMES),
}


def check_models(chosen: Mapping[str, str | None], prefix: str = "", echo: bool = True) -> dict[str, str]:
    """The given names (None or absent: the server's or the default), checked; BadInput names the field at fault
    (`prefix` + field, e.g. '--pose') and the names offered, and the name given only with `echo` (the REST API
    never sends a caller's value back)."""
    out = {}
    for field, name in chosen.items():
        if name is None:
            continue
        try:
            out[field] = MODELS[field][0](name)
        except BadInput as exc:
            reason = exc if echo else f"unknown name; choose one of: {', '.join(MODELS[field][2])}"
            raise BadInput(f"{prefix}{field}: {reason}") from None
    return out


def with_models(options: AnalyzeOptions, chosen: Mapping[str, str]) -> AnalyzeOptions:
    """A copy of `options` running these (checked) models; `options` itself is left as it is (a server's)."""
    if not chosen:
        return options
    return replace(options, stages=replace(options.stages, **dict(chosen)))
