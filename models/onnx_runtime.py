"""ONNX Runtime for the hot path: one-thread sessions, and models exported from torch once per machine.

A stage host that imports torch pays about 1 CPU-s and a few hundred MB for it. Our torch models (MiniLM,
PreFM, the grounder) are exported to ONNX the first time a machine needs them, into `<cache>/onnx/` under a
name keyed by their weights, and every later process only opens the file. The export writes a temporary file
and renames it, so a concurrent process sees no file or the whole file.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from models.cache import cache_dir, content_key

log = logging.getLogger(__name__)


def session(model: str | Path | bytes, threads: int = 1):
    """An ONNX Runtime CPU session on `threads` threads (one by default, as every stage runs)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = threads
    source = model if isinstance(model, bytes) else str(model)
    return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])


def exported_file(kind: str, *key_parts: str) -> Path:
    """Where the export of a `kind` model with these key parts (weights' hash, shapes, code version) lives."""
    return cache_dir() / "onnx" / f"{kind}-{content_key(*key_parts)}.onnx"


def export_once(path: Path, export: Callable[[str], None], what: str) -> Path:
    """`path`, calling `export(tmp_path)` first when it is absent; `export` writes the ONNX file to `tmp_path`."""
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".tmp", delete=False) as fh:
        tmp = fh.name
    log.info("exporting %s to ONNX once (%s)", what, path)
    try:
        export(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path
