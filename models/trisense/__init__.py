"""TriSense-style temporal grounding over per-second visual, audio and speech features."""

from pathlib import Path

_CHECKPOINTS = Path(__file__).resolve().parent / "checkpoints"
# Trained on corpus v3 with text-aligned evidence and a calibrated "not found", and answering through the val-chosen
# fusion with text matching stored next to it (`embedded_v3.fusion.json`, docs/grounding.md).
OPEN_VOCAB_CHECKPOINT = _CHECKPOINTS / "embedded_v3.pt"
SHIPPED_CHECKPOINT = OPEN_VOCAB_CHECKPOINT  # the default grounder (`--query`, standing queries, `POST /v1/search`)
# The earlier default (corpus v1, no "not found"); still loadable with `--grounding-model`.
CORPUS_V1_CHECKPOINT = _CHECKPOINTS / "embedded.pt"
