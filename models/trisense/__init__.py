"""TriSense-style temporal grounding over per-second visual, audio and speech features."""

from pathlib import Path

SHIPPED_CHECKPOINT = Path(__file__).resolve().parent / "checkpoints" / "embedded.pt"  # the shipped embedded TriSense-lite grounder
# Opt-in (`--grounding-model`): trained on corpus v3 with text-aligned evidence and a calibrated "not found";
# not the default because it answers a sound query with speech that mentions the sound (docs/grounding.md).
OPEN_VOCAB_CHECKPOINT = Path(__file__).resolve().parent / "checkpoints" / "embedded_v3.pt"
