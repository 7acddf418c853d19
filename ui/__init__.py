"""Foresight: ui package."""
