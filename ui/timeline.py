"""The events timeline: one lane per modality (audio, visual, audio-visual), one row per sound or object in its
lane, so labels are axis labels that never overprint at any density; human names, mm:ss times, and a click on
an event selects it (Streamlit's `on_select`) so the page can play it. Long streams zoom: the mouse wheel
zooms the shared time axis of the three lanes, a drag pans it, a double click shows the whole span again.

One mark per lane and no layering: Vega never has to union domains (its "conflicting sort" warnings came from
the bars and the text labels sorting one axis two ways).
"""

from __future__ import annotations

import warnings

import altair as alt
import pandas as pd

MODALITY_ORDER = ["audio", "visual", "audio-visual"]
OUTAGE_LANE = "outages"  # a fourth lane, only for a live source that went away: its gaps with their true length
MODALITY_COLORS = {"audio": "#1f77b4", "visual": "#2ca02c", "audio-visual": "#d62728", OUTAGE_LANE: "#7f7f7f"}
AWAY = "source away (no data)"
NO_EVENTS = "(no events)"
ROW_PX = 22
PICK = "pick"
ZOOM = "zoom"
# mm:ss on the axis (h:mm:ss past an hour), from seconds
MMSS = ("(datum.value >= 3600 ? floor(datum.value / 3600) + ':' : '') + "
        "format(floor(datum.value / 60) % 60, '02d') + ':' + format(floor(datum.value % 60), '02d')")


def human_label(label: str) -> str:
    """"Telephone_bell_ringing" -> "Telephone bell ringing"."""
    text = " ".join(str(label).replace("_", " ").split())
    return text[:1].upper() + text[1:]


def mmss(seconds: float) -> str:
    seconds = int(max(0.0, float(seconds)))
    h, m, s = seconds // 3600, seconds // 60 % 60, seconds % 60
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def outage_events(gaps: list | None) -> list[dict]:
    """A live source's outages (`[start, end]` on the stream clock, e.g. the ingest's `lost_intervals`) as
    timeline rows of the outage lane."""
    return [{"name": AWAY, "modality": OUTAGE_LANE, "start": float(a), "end": float(b), "confidence": None}
            for a, b in gaps or [] if b > a]


def timeline_frame(events: list[dict], span: float) -> pd.DataFrame:
    """One row per event (`name`, the event's readable name, `lane`, `start`, `end`, `shown_end` at least 1/150
    of the span so short events stay visible, `when` as mm:ss, `by`: PreFM or the tagger), and a placeholder
    row for each lane without events (the outage lane has rows only when there were outages)."""
    min_w = max(span, 1.0) / 150
    rows = [{"name": e.get("name") or human_label(e.get("label", "?")), "lane": e.get("modality") or "audio",
             "by": {"prefm": "PreFM", "tags": "tagger"}.get(e.get("source") or "", ""),
             "start": float(e["start"]), "end": float(e["end"]),
             "shown_end": max(float(e["end"]), float(e["start"]) + min_w),
             "when": f"{mmss(e['start'])}-{mmss(e['end'])}" + (f" ({float(e['end']) - float(e['start']):.0f} s)"
                                                              if e.get("modality") == OUTAGE_LANE else ""),
             "confidence": float(e.get("confidence") or 0.0)}
            for e in events]
    for lane in MODALITY_ORDER:
        if not any(r["lane"] == lane for r in rows):
            rows.append({"name": NO_EVENTS, "lane": lane, "start": None, "end": None, "shown_end": None,
                         "when": "", "confidence": None, "by": ""})
    return pd.DataFrame(rows, columns=["name", "lane", "start", "end", "shown_end", "when", "confidence", "by"])


def timeline_chart(events: list[dict], duration_s: float | None = None, selectable: bool = True,
                   gaps: list | None = None) -> alt.VConcatChart:
    """Three stacked lanes sharing one mm:ss time axis (and a fourth with the source's outages, `gaps`); rows
    in a lane are ordered by first appearance."""
    events = list(events) + outage_events(gaps)
    span = max([duration_s or 0.0, *(float(e["end"]) for e in events), 1.0])
    df = timeline_frame(events, span)
    lanes_shown = MODALITY_ORDER + ([OUTAGE_LANE] if (df["lane"] == OUTAGE_LANE).any() else [])
    pick = alt.selection_point(name=PICK, fields=["start", "end", "name"], on="click", clear="dblclick")
    zoom = alt.selection_interval(name=ZOOM, bind="scales", encodings=["x"])  # wheel zooms, drag pans
    lanes = []
    for i, lane in enumerate(lanes_shown):
        part = df[df["lane"] == lane]
        order = list(part.sort_values("start", na_position="last")["name"].drop_duplicates())
        last = i == len(lanes_shown) - 1
        x = alt.X("start:Q", scale=alt.Scale(domain=[0, span], nice=False), title="time (mm:ss)" if last else None,
                  axis=alt.Axis(labelExpr=MMSS, labels=last, ticks=last, grid=True, tickCount=10, tickMinStep=1))
        chart = alt.Chart(part, title=alt.TitleParams(lane, anchor="start", fontSize=12, color=MODALITY_COLORS[lane])
                          ).mark_bar(color=MODALITY_COLORS[lane], cornerRadius=2, height=ROW_PX - 6).encode(
            x=x, x2="shown_end:Q",
            y=alt.Y("name:N", sort=order, title=None, axis=alt.Axis(labelLimit=220, labelFontSize=12)),
            opacity=alt.value(0.8),
            tooltip=[alt.Tooltip("name:N", title="event"), alt.Tooltip("when:N", title="time"),
                     alt.Tooltip("confidence:Q", format=".2f"), alt.Tooltip("by:N", title="found by")],
        ).properties(height=alt.Step(ROW_PX))
        lanes.append(chart)
    out = alt.vconcat(*lanes, spacing=14).resolve_scale(x="shared")
    with warnings.catch_warnings():  # one click selection and one zoom over the three lanes is what is meant
        warnings.filterwarnings("ignore", "Automatically deduplicated selection parameter")
        out = out.add_params(zoom, pick) if selectable else out.add_params(zoom)
    return out.configure_view(stroke="#ddd")
