"""A page for the timeline's browser test (`streamlit run tests/tools/timeline_page.py`): the dashboard's own
timeline panel with no event, one event, and 20 non-overlapping events whose click plays the clip named by
$FORESIGHT_TIMELINE_MEDIA."""

from __future__ import annotations

import os
from pathlib import Path

import streamlit as st

from ui.panels import timeline_panel

LABELS = ["Telephone_bell_ringing", "Fire_alarm", "Speech", "Dog", "person", "car", "Door_knock", "Glass_break",
          "bicycle", "Siren"]
MODALITIES = ["audio", "visual", "audio-visual"]


def many(n: int = 20, span: float = 20.0) -> list[dict]:
    """`n` events one after another over `span` seconds, cycling through the lanes."""
    step = span / n
    return [{"label": LABELS[i % len(LABELS)] + ("" if i < len(LABELS) else f"_{i}"),
             "modality": MODALITIES[i % 3], "start": i * step, "end": i * step + step * 0.8, "confidence": 0.8}
            for i in range(n)]


st.set_page_config(page_title="timeline test", layout="wide")
for name, events, media in [("none", [], None), ("one", many(1), None),
                            ("twenty", many(20), Path(os.environ["FORESIGHT_TIMELINE_MEDIA"]))]:
    with st.container(key=f"chart_{name}"):
        timeline_panel(events, 20.0, media, key=f"timeline_{name}")
