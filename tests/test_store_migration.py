"""A database written before events carried their model and taxonomy opens, upgrades and keeps its rows."""

from __future__ import annotations

import sqlite3

from pipelines.sinks.store import Store

OLD_EVENTS = """CREATE TABLE events (
    id INTEGER PRIMARY KEY, job_id TEXT NOT NULL, source TEXT NOT NULL, label TEXT NOT NULL,
    modality TEXT NOT NULL, start REAL NOT NULL, "end" REAL NOT NULL, confidence REAL NOT NULL)"""


def test_old_events_table_gains_model_and_taxonomy(tmp_path):
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        db.execute(OLD_EVENTS)
        db.execute("INSERT INTO events (job_id, source, label, modality, start, \"end\", confidence) "
                   "VALUES ('old', 'a.mp4', 'Speech', 'audio', 0, 1, 0.9)")
    store = Store(path)
    job = store.create_job("analyze", "b.mp4")
    event = {"label": "Applause", "modality": "audio", "start": 3.0, "end": 5.0, "confidence": 0.8,
             "source": "tags", "taxonomy": "audioset", "name": "Applause"}
    store.save_result(job, {"source": "b.mp4", "events": [event], "transcript": [], "alerts": []})
    rows = store.db.execute("SELECT job_id, label, model, taxonomy FROM events ORDER BY id").fetchall()
    assert [tuple(r) for r in rows] == [("old", "Speech", None, None), (job, "Applause", "tags", "audioset")]
