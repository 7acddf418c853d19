"""One copy per process of each loaded model that holds no per-stream state.

A stage host serves many streams from one process (`pipelines/spine/actors.StageHost`): each stream gets its
own stage objects (VAD spans, PreFM ring buffer, pose tracks, safety log), and those objects take their
weights from here, so a second stream costs its state only. Only models whose calls leave nothing behind go
here (ONNX and CTranslate2 sessions, YOLO, MediaPipe in IMAGE mode, PreFM's network); anything that tracks
across calls (MediaPipe in VIDEO mode) is built per stream.

Calls on a shared model are not serialised here: the stage host runs one call at a time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import TypeVar

T = TypeVar("T")

_MODELS: dict[Hashable, object] = {}
_LOCK = threading.RLock()  # a loader may ask for another shared model


def shared(key: Hashable, load: Callable[[], T]) -> T:
    """The model stored under `key` in this process, loaded by `load()` the first time it is asked for."""
    with _LOCK:
        if key not in _MODELS:
            _MODELS[key] = load()
        return _MODELS[key]  # type: ignore[return-value]


def loaded() -> list[Hashable]:
    """The keys of the models this process holds (for tests and the memory benchmark)."""
    with _LOCK:
        return list(_MODELS)
