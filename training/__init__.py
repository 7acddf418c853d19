"""Foresight: training package."""
