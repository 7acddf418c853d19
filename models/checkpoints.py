"""The project's torch checkpoint files, read and written one way.

Every `.pt` we ship or train is a plain dict (`format`, `config`, `state_dict`, `meta`). Reading is always on
the CPU with `weights_only=True` (no pickled code runs), and a missing, corrupt or foreign file is one clear
error. Writing goes to a temporary file in the same folder first, so an interrupted save never leaves half a
checkpoint where a good one was. torch is imported only when a checkpoint is actually read or written.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def read(path: str | Path, fmt: str | None = None, what: str = "torch checkpoint") -> dict[str, Any]:
    """The dict saved at `path`. FileNotFoundError when there is no file; ValueError when it is not a
    readable checkpoint, or (with `fmt`) when its `format` field is another one."""
    import torch

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no {what} at {path}")
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # a corrupt file, or a pickle with objects weights_only refuses
        raise ValueError(f"{path}: not a readable {what} ({type(exc).__name__})") from exc
    if not isinstance(blob, dict):
        raise ValueError(f"{path}: not a {what} (it holds a {type(blob).__name__}, not a dict)")
    if fmt is not None and blob.get("format") != fmt:
        raise ValueError(f"{path}: not a {fmt} checkpoint (format {blob.get('format')!r})")
    return blob


def write(payload: dict[str, Any], path: str | Path) -> Path:
    """Save `payload` at `path` (parents made), replacing any old file only once the new one is complete."""
    import torch

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        torch.save(payload, tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path
