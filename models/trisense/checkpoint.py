"""The grounder's checkpoint file: one `.pt` with the config (a plain dict), the weights and JSON-able metadata.

Read by the inference API (`grounder.py`) and by the ONNX export (`runtime.py`), written by training."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from models.trisense.config import TriSenseConfig

CHECKPOINT_FORMAT = "foresight-trisense-v1"


def save_checkpoint(path: str | Path, model: Any, meta: dict | None = None) -> None:
    """One `.pt` holding the config (plain dict), the weights and JSON-able metadata."""
    import torch

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(
        {
            "format": CHECKPOINT_FORMAT,
            "config": model.config.to_dict(),
            "state_dict": model.state_dict(),
            "meta": meta or {},
        },
        path,
    )


def load_checkpoint(path: str | Path) -> tuple[Any, dict]:
    """Rebuild the torch model from a checkpoint written by `save_checkpoint` (loaded with weights_only=True)."""
    import torch

    from models.trisense.modeling_trisense import TriSenseModel

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise ValueError(f"{path} is not a readable torch checkpoint: {exc}") from exc
    if not isinstance(blob, dict) or blob.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{path} is not a TriSense grounder checkpoint")
    model = TriSenseModel(TriSenseConfig.from_dict(blob["config"]))
    model.load_state_dict(blob["state_dict"])
    model.eval()
    return model, dict(blob.get("meta", {}))
