"""ACAVP: affine, colour and additive visual prompts in front of a frozen visual encoder (Enomoto, NeurIPS 2025)."""
