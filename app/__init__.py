"""Foresight: app package."""
