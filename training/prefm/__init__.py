"""Training, data loading and evaluation for PreFM (see docs/prefm.md)."""
