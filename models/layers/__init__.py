"""Reusable network layers shared by Foresight's models."""
