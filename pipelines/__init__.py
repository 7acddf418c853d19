"""Foresight: pipelines package."""
