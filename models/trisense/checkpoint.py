"""The grounder's checkpoint file: one `.pt` with the config (a plain dict), the weights and JSON-able metadata.

Read by the inference API (`grounder.py`) and by the ONNX export (`runtime.py`), written by training."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from models import checkpoints
from models.trisense.config import TriSenseConfig

CHECKPOINT_FORMAT = "foresight-trisense-v1"


def save_checkpoint(path: str | Path, model: Any, meta: dict | None = None) -> None:
    """One `.pt` holding the config (plain dict), the weights and JSON-able metadata."""
    checkpoints.write({"format": CHECKPOINT_FORMAT, "config": model.config.to_dict(),
                       "state_dict": model.state_dict(), "meta": meta or {}}, path)


def load_checkpoint(path: str | Path) -> tuple[Any, dict]:
    """Rebuild the torch model from a checkpoint written by `save_checkpoint` (loaded with weights_only=True)."""
    from models.trisense.modeling_trisense import TriSenseModel

    blob = checkpoints.read(path, CHECKPOINT_FORMAT, "grounder checkpoint")
    model = TriSenseModel(TriSenseConfig.from_dict(blob["config"]))
    model.load_state_dict(blob["state_dict"])
    model.eval()
    return model, dict(blob.get("meta", {}))
