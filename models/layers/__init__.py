"""Reusable network layers shared by Foresight's models."""

ATTENTION_KINDS = ("plain", "fan")  # here, not in `fan`, so that configs can check it without importing torch
