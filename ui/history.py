"""Past jobs and streams from the store: filter them by source, status, label and day, reopen one in the
panels above, and download its result as JSON, WebVTT (the transcript) or CSV."""

from __future__ import annotations

import datetime as dt
import json
import time

import pandas as pd
import streamlit as st

from pipelines.sinks.exporters import to_csv, to_webvtt
from pipelines.sinks.store import Store

STATUSES = ["done", "stopped", "failed", "running", "queued"]


def filter_jobs(store: Store, jobs: list[dict], source: str = "", statuses: list[str] | None = None,
                label: str = "", since: dt.date | None = None) -> list[dict]:
    """The jobs whose source contains `source`, whose status is in `statuses`, started on or after `since`, and
    (for `label`) that have an event whose label contains it (case-insensitive; "_" and " " alike)."""
    want = label.strip().lower().replace("_", " ")
    start = time.mktime(since.timetuple()) if since else 0.0
    out = []
    for job in jobs:
        if source.strip().lower() not in job["source"].lower() or job["created_at"] < start:
            continue
        if statuses and job["status"] not in statuses:
            continue
        if want and not any(want in e["label"].lower().replace("_", " ") for e in store.rows("events", job["id"])):
            continue
        out.append(job)
    return out


def jobs_frame(jobs: list[dict]) -> pd.DataFrame:
    return pd.DataFrame([{"started": time.strftime("%Y-%m-%d %H:%M", time.localtime(j["created_at"])),
                          "source": j["source"], "kind": j["kind"], "status": j["status"],
                          "error": j["error"] or "", "job": j["id"]} for j in jobs],
                        columns=["started", "source", "kind", "status", "error", "job"])


def history_panel(store: Store) -> None:
    state = st.session_state
    with st.expander("History: past jobs and streams", expanded=False):
        c1, c2, c3, c4 = st.columns([3, 3, 3, 2])
        source = c1.text_input("Source contains", key="hist_source")
        statuses = c2.multiselect("Status", STATUSES, key="hist_status")
        label = c3.text_input("Has an event", key="hist_label", placeholder="e.g. fire alarm")
        since = c4.date_input("Since", value=None, key="hist_since")
        jobs = filter_jobs(store, store.recent_jobs(200), source, statuses, label, since)
        if not jobs:
            st.write("no jobs match")
            return
        st.dataframe(jobs_frame(jobs), hide_index=True, width="stretch")
        by_id = {j["id"]: j for j in jobs}
        chosen = st.selectbox("Job", list(by_id), key="hist_job",
                              format_func=lambda i: f"{jobs_frame([by_id[i]]).iloc[0]['started']} · "
                                                    f"{by_id[i]['source']} · {by_id[i]['status']}")
        result = store.result(chosen)
        if result is None:
            st.caption(f"no saved result ({by_id[chosen]['status']}"
                       + (f": {by_id[chosen]['error']})" if by_id[chosen]["error"] else ")"))
            return
        open_col, json_col, vtt_col, csv_col = st.columns(4)
        if open_col.button("Open", key="hist_open", type="primary"):
            state.update(result=result, job_id=chosen, error=None)
            st.rerun()
        stem = f"foresight-{chosen[:12]}"
        json_col.download_button("JSON", json.dumps(result, indent=2, ensure_ascii=False), f"{stem}.json",
                                 "application/json", key="hist_json")
        vtt_col.download_button("WebVTT", to_webvtt(result.get("transcript", [])), f"{stem}.vtt", "text/vtt",
                                key="hist_vtt")
        csv_col.download_button("CSV", to_csv(result), f"{stem}.csv", "text/csv", key="hist_csv")
