"""What live streams write in the store is kept `--keep-days` (`app/services/row_retention.py`): old rows, review
cards and finished stream jobs (with their recordings) go; new ones, running jobs, uploads and the other
surface's streams stay. Real SQLite, the real pruner thread."""

from __future__ import annotations

import time

import pytest

from app.services.row_retention import DAY_S, RowPruner
from pipelines.sinks.review import Card
from pipelines.sinks.store import Store


def _rows(store: Store, job: str, at: float = 0.0) -> None:
    """One row of each kind at stream time `at`, and a review card."""
    store.append_rows(job, "cam", [{"label": "Dog", "modality": "audio", "start": at, "end": at + 1,
                                    "confidence": 0.9}],
                      [{"start": at, "end": at + 1, "text": f"said at {at:g}"}],
                      [{"time": at, "severity": "info", "rule": "line_crossing", "reason": "a car crossed"}],
                      [{"query": "a dog", "start": at, "end": at + 1, "score": 0.5}])
    store.add_or_merge_card(Card(job, "cam", "alert", f"k{at}", "a car crossed", "line", at, time.time()))


def _age(store: Store, job: str, days: float, rows: bool = True, legacy: bool = False) -> None:
    """Date the job (and its rows and cards) `days` back; `legacy`: rows written before the `wall` column."""
    back = days * DAY_S
    store.db.execute("UPDATE jobs SET created_at=created_at-?, updated_at=updated_at-? WHERE id=?", (back, back, job))
    if rows:
        for table in ("events", "transcript", "moments", "alerts"):
            store.db.execute(f"UPDATE {table} SET wall={'NULL' if legacy else 'wall-?'} WHERE job_id=?",
                             (job,) if legacy else (back, job))
        store.db.execute("UPDATE review SET wall_time=wall_time-?, last_wall=last_wall-? WHERE job_id=?",
                         (back, back, job))


def _count(store: Store, job: str) -> dict[str, int]:
    out = {t: len(store.rows(t, job)) for t in ("events", "transcript", "moments", "alerts")}
    out["review"] = store.count_cards(job_id=job)
    return out


@pytest.mark.parametrize("chunk", [20_000, 1])
def test_old_stream_rows_cards_and_finished_jobs_go_new_and_other_ones_stay(tmp_path, monkeypatch, chunk):
    """Also a row to a transaction (`row_pruning.CHUNK`, so a sink beside a big first prune waits for a chunk):
    the same rows go."""
    from pipelines.sinks import row_pruning

    monkeypatch.setattr(row_pruning, "CHUNK", chunk)
    monkeypatch.setattr(row_pruning, "PAUSE_S", 0.0)
    store = Store(tmp_path / "f.db")
    recordings = tmp_path / "recordings"
    running = store.create_job("stream", "rtsp://cam")  # running 40 days: its first day's rows go, today's stay
    _rows(store, running, at=0.0)
    _age(store, running, 40)
    _rows(store, running, at=40 * DAY_S)
    ended = store.create_job("stream", "rtsp://old")  # ended 35 days ago: goes whole, with its recording
    _rows(store, ended)
    store.update_job(ended, status="stopped")
    _age(store, ended, 35)
    (recordings / ended).mkdir(parents=True)
    (recordings / ended / "0.ts").write_bytes(b"x")
    legacy = store.create_job("stream", "rtsp://legacy")  # rows from before `wall`: dated by job start + time
    _rows(store, legacy, at=0.0)
    _rows(store, legacy, at=39 * DAY_S)  # 40-day-old job: this one is a day old
    _age(store, legacy, 40, legacy=True)
    upload = store.create_job("upload", "clip.mp4")  # an upload stays until its user deletes it
    _rows(store, upload)
    store.update_job(upload, status="done")
    _age(store, upload, 60)
    other = store.create_job("dashboard-live", "rtsp://cam")  # the dashboard's, pruned by the dashboard
    _rows(store, other)
    _age(store, other, 60)

    pruner = RowPruner(store, "stream", 30, recordings)
    counts = pruner.prune()
    # (the legacy job's two cards carry their own wall time, both dated 40 days back)
    assert counts == {"events": 3, "transcript": 3, "moments": 3, "alerts": 3, "review": 4, "jobs": 1}, counts
    assert _count(store, running) == {"events": 1, "transcript": 1, "moments": 1, "alerts": 1, "review": 1}
    assert [r["text"] for r in store.rows("transcript", running)] == [f"said at {40 * DAY_S:g}"]
    assert store.job(ended) is None and not (recordings / ended).exists()
    assert [r["text"] for r in store.rows("transcript", legacy)] == [f"said at {39 * DAY_S:g}"]
    for job in (upload, other):
        assert _count(store, job) == {"events": 1, "transcript": 1, "moments": 1, "alerts": 1, "review": 1}
        assert store.job(job) is not None
    assert store.job(running)["status"] == "queued"  # a job still running is never deleted
    assert pruner.prune() == dict.fromkeys(counts, 0)  # nothing left to delete
    assert pruner.prune(now=time.time() + 31 * DAY_S)["events"] == 2  # a month on, the rest is old too


def test_the_pruner_thread_runs_at_start_and_keeping_everything_starts_none(tmp_path):
    store = Store(tmp_path / "f.db")
    job = store.create_job("stream", "rtsp://cam")
    _rows(store, job)
    _age(store, job, 2)
    assert RowPruner.start_for(store, "stream", 0) is None  # --keep-days 0: everything is kept
    pruner = RowPruner.start_for(store, "stream", 1.5)
    try:
        deadline = time.time() + 30
        while pruner.deleted.get("events", 0) < 1:
            assert time.time() < deadline, pruner.deleted
            time.sleep(0.05)
    finally:
        pruner.close()
    assert pruner.deleted["review"] == 1 and store.rows("events", job) == []
    with pytest.raises(ValueError):
        RowPruner(store, "stream", 0)


def test_an_older_database_gains_the_wall_column(tmp_path):
    """A store written before rows had a `wall` column opens, gains it, and its rows are dated by their job."""
    import sqlite3

    path = tmp_path / "old.db"
    Store(path).close()
    db = sqlite3.connect(path)
    for table in ("events", "transcript", "moments", "alerts"):
        db.execute(f"ALTER TABLE {table} DROP COLUMN wall")
    db.commit()
    db.close()
    store = Store(path)
    assert "wall" in {row[1] for row in store.db.execute("PRAGMA table_info(events)")}


def test_a_writer_gets_in_between_the_chunks_of_a_big_prune(tmp_path, monkeypatch):
    """A sink writes on its own connection (another process, on Ray) while the first prune of a big store runs:
    it gets in between two chunks, while old rows are still left, where one transaction made it wait for the
    whole prune (the old code: no old row left when the write came)."""
    import threading

    from pipelines.sinks import row_pruning

    monkeypatch.setattr(row_pruning, "CHUNK", 100)
    store = Store(tmp_path / "f.db")
    job = store.create_job("stream", "rtsp://cam")
    store.db.execute("BEGIN")
    store.db.executemany('INSERT INTO events (job_id, source, label, modality, start, "end", confidence, wall) '
                         "VALUES (?, 'cam', 'Dog', 'audio', ?, ?, 0.9, ?)",
                         ((job, i, i + 1, time.time() - 40 * DAY_S) for i in range(3000)))
    store.db.execute("COMMIT")
    pruning = threading.Thread(target=store.prune_stream_rows, args=("stream", time.time() - 30 * DAY_S))
    pruning.start()
    writer = Store(tmp_path / "f.db")  # the sink's own connection
    old = "SELECT COUNT(*) FROM events WHERE start < 3000"
    while writer.db.execute(old).fetchone()[0] == 3000 and pruning.is_alive():  # the prune has begun
        time.sleep(0.001)
    _rows(writer, job, at=5000.0)
    left = writer.db.execute(old).fetchone()[0]
    pruning.join()
    assert left > 0  # the write came between two chunks, with old rows still to go
    assert [r["start"] for r in store.rows("events", job)] == [5000.0]  # it is kept; every old row went
