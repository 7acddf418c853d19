"""Foresight: models package."""
