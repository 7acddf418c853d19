"""TriSense-style temporal grounding over per-second visual, audio and speech features."""
