"""Databases written by older releases open, upgrade and keep their rows: events without their model and
taxonomy, jobs without the "stopped" status."""

from __future__ import annotations

import sqlite3

import pytest

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


OLD_JOBS = """CREATE TABLE jobs (
    id TEXT PRIMARY KEY, kind TEXT NOT NULL, source TEXT NOT NULL, key TEXT,
    status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed')),
    progress REAL NOT NULL DEFAULT 0, error TEXT, result_json TEXT,
    created_at REAL NOT NULL, updated_at REAL NOT NULL)"""


def test_old_jobs_table_learns_the_stopped_status(tmp_path):
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        db.execute(OLD_JOBS)
        db.execute("CREATE INDEX jobs_key ON jobs(key)")
        db.execute("INSERT INTO jobs VALUES ('old', 'stream', 'rtsp://cam', 'k', 'done', 1, NULL, '{}', 1.0, 2.0)")
        with pytest.raises(sqlite3.IntegrityError):  # what the old schema refuses
            db.execute("UPDATE jobs SET status='stopped'")
    store = Store(path)
    assert store.job("old")["status"] == "done" and store.job_by_key("k")["id"] == "old"
    job = store.create_job("dashboard-live", "rtsp://cam")
    store.save_result(job, {"source": "rtsp://cam", "events": [], "transcript": [], "alerts": []}, status="stopped")
    assert store.job(job)["status"] == "stopped" and store.result(job)["source"] == "rtsp://cam"
    assert store.count_jobs(["stopped"]) == 1 and store.count_jobs(["done"]) == 1
    store.close()
    assert Store(path).job(job)["status"] == "stopped"  # opening it again changes nothing
    with sqlite3.connect(path) as db:
        names = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
        assert "jobs_key" in names and "jobs_before_stopped" not in names
        with pytest.raises(sqlite3.IntegrityError):
            db.execute("UPDATE jobs SET status='paused'")


OLD_ALERTS = """CREATE TABLE alerts (
    id INTEGER PRIMARY KEY, job_id TEXT NOT NULL, source TEXT NOT NULL, time REAL NOT NULL,
    severity TEXT NOT NULL, rule TEXT NOT NULL, reason TEXT NOT NULL, lead_time_s REAL,
    evidence_json TEXT NOT NULL)"""


@pytest.mark.parametrize("table", ["events", "transcript", "moments", "alerts"])
def test_a_jobs_rows_are_read_through_an_index(tmp_path, table):
    """Every row table is read by job (a job's page, the stream's end, pruning), so each has an index on job_id:
    without one, a camera's months of alerts were scanned whole for each job (moments and alerts had none).
    An older database gains it."""
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        db.execute(OLD_ALERTS)
    store = Store(path)
    plan = " ".join(str(r[-1]) for r in store.db.execute(f"EXPLAIN QUERY PLAN SELECT * FROM {table} WHERE job_id=?",
                                                          ("j",)))
    assert f"USING INDEX {table}_job" in plan, plan
