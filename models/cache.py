"""Arrays worth keeping between processes, on disk by content: what every start-up would otherwise recompute.

The safety retriever embeds its whole knowledge base (about 300 rules, twice) with MiniLM each time a process
starts: 4-5 s of one core for every CLI run, stage host and test process, for vectors that never change. The
file name is a hash of everything the array depends on, so a changed rule set or model is simply a new file.
A cache that cannot be read or written (read-only home, a half-written file) is recomputed, never an error.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np


def cache_dir() -> Path:
    """Where assembled model files and stored arrays go: $FORESIGHT_CACHE, else ~/.cache/foresight."""
    return Path(os.environ.get("FORESIGHT_CACHE", Path.home() / ".cache" / "foresight"))


def content_key(*parts: str) -> str:
    """A file-name-safe hash of the strings an array depends on."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8", "surrogatepass") + b"\x00")
    return digest.hexdigest()[:32]


def file_sha256(path: str | Path) -> str:
    """The hex sha256 of a file's bytes, read a megabyte at a time (checkpoints, fetched model files)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def publish_folder(staging: Path, target: Path, problem: str | None) -> None:
    """Put a fetched folder, checked into `problem` (None when sound), in `target`'s place whole or not at all;
    a problem removes it and is a BadInput with that line."""
    import shutil

    from models.errors import BadInput

    if problem:
        shutil.rmtree(staging, ignore_errors=True)
        raise BadInput(problem)
    if target.exists():
        shutil.rmtree(target)
    os.replace(staging, target)


def stored_array(kind: str, key: str, compute: Callable[[], np.ndarray]) -> np.ndarray:
    """`compute()`, kept under `<cache>/arrays/<kind>-<key>.npy` and read back by later processes."""
    path = cache_dir() / "arrays" / f"{kind}-{key}.npy"
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError):  # absent, unreadable or half-written: compute it
        pass
    array = compute()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".tmp", delete=False) as fh:
            np.save(fh, array, allow_pickle=False)
        os.replace(fh.name, path)  # atomic: a concurrent reader sees the old state or the whole file
    except OSError:
        pass  # a read-only cache: the next process computes it again
    return array
