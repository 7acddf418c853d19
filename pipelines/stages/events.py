"""How an output event is labelled: the model that produced it, its taxonomy and its readable name.

The merger that makes events out of per-second labels is `models/events.py` (one mechanism for tags and
PreFM).
"""

from __future__ import annotations


def labelled(event: dict, source: str, taxonomy: str) -> dict:
    """`event` with the model that produced it, its label's taxonomy and the label as a person writes it."""
    from models.taxonomy import readable

    return {**event, "source": source, "taxonomy": taxonomy, "name": readable(event["label"], taxonomy)}
