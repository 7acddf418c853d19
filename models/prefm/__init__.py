"""PreFM online audio-visual event parsing: network, live inference, metrics, labels."""

from pathlib import Path

SHIPPED_CHECKPOINT = Path(__file__).resolve().parent / "checkpoints" / "embedded_llp.pt"  # the shipped embedded PreFM (LLP classes)
