"""TriSense-style temporal grounding over per-second visual, audio and speech features."""

from pathlib import Path

SHIPPED_CHECKPOINT = Path(__file__).resolve().parent / "checkpoints" / "embedded.pt"  # the shipped embedded TriSense-lite grounder
