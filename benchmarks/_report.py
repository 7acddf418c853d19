"""The one way a benchmark keeps its result file: indented JSON at `--json PATH`, its folder made if need be."""

from __future__ import annotations

import json
from pathlib import Path


def save_json(data: object, path: Path | None) -> None:
    """Write `data` to `path` (nothing when `path` is None)."""
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")
