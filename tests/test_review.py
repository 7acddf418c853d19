"""The review feed: cards out of a second (alerts, fired watches, crossings, loiters, events of note), the
cool-down merge, thumbnails, and the cards' table in a real SQLite store (an old database gains it), written by
the sink as seconds arrive."""

from __future__ import annotations

import io
import sqlite3

from PIL import Image

from pipelines.sinks.review import COOLDOWN_S, Card, cards_of, merges, notable, thumbnail
from pipelines.sinks.sink import Sink
from pipelines.sinks.store import Store
from pipelines.stages.record import Second

ALERT = {"time": 12.0, "severity": "critical", "rule": "Leave the building when a smoke or fire alarm sounds",
         "reason": "a smoke alarm sounds", "lead_time_s": 0.0, "evidence": ["Smoke detector"]}
WATCH = {"query": "a telephone is ringing", "start": 8.0, "end": 12.0, "score": 0.61, "standing": True,
         "fired_at": 15.0, "modality_weights": {"audio": 1.0}}
ZONE_WATCH = {"query": "someone stays at the door", "start": 20.0, "end": 26.0, "score": 1.0, "standing": True,
              "method": "zone", "zone": "door", "label": "person", "track_id": 4}
CROSSING = {"line": "gate", "label": "person", "track_id": 3, "time": 14.5, "direction": "left_to_right"}
LOITER = {"kind": "loiter", "zone": "door", "label": "person", "track_id": 4, "time": 26.0, "dwell_s": 6.0}
ENTER = {"kind": "zone_enter", "zone": "door", "label": "person", "track_id": 4, "time": 20.0}
SIREN = {"label": "Siren", "name": "Siren", "modality": "audio", "start": 3.0, "end": 9.0, "confidence": 0.7}
SPEECH = {"label": "Speech", "name": "Speech", "modality": "audio", "start": 0.0, "end": 9.0, "confidence": 0.9}


def jpeg(width: int = 640, height: int = 360, colour=(200, 30, 30)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), colour).save(out, format="JPEG")
    return out.getvalue()


def second(t: float = 15.0, **kw) -> Second:
    return Second(index=int(t), start=t, end=t + 1, emitted_wall=1_700_000_000.0 + t, **kw)


def test_a_second_becomes_cards_of_each_kind_in_time_order():
    record = second(alerts=[ALERT], moments=[WATCH, {**WATCH, "standing": False, "query": "asked once"}],
                    crossings=[CROSSING], zone_events=[ENTER, LOITER], events_closed=[SIREN, SPEECH])
    cards = cards_of(record, "job1", "rtsp://cam/1")
    assert [(c.kind, c.time) for c in cards] == [("event", 3.0), ("watch", 8.0), ("alert", 12.0),
                                                 ("crossing", 14.5), ("loiter", 26.0)]
    by = {c.kind: c for c in cards}
    assert by["alert"].title == ALERT["rule"] and by["alert"].why == "a smoke alarm sounds"
    assert by["alert"].severity == "critical"
    assert by["watch"].title == "a telephone is ringing" and "00:08-00:12 (score 0.61)" in by["watch"].why
    assert by["crossing"].title == "person crossed gate" and by["crossing"].why == "#3 went left to right"
    assert by["loiter"].title == "person loitering in door" and by["loiter"].why == "#4 stayed 6 s"
    assert by["event"].title == "Siren" and "confidence 0.70" in by["event"].why
    assert all(c.wall_time == 1_700_000_015.0 and c.count == 1 and c.last_time == c.time for c in cards)
    assert {c.job_id for c in cards} == {"job1"} and {c.source for c in cards} == {"rtsp://cam/1"}


def test_a_zone_watch_says_which_track_and_zone():
    (card,) = cards_of(second(moments=[ZONE_WATCH]), "j", "cam")
    assert card.kind == "watch" and card.why == "person #4 in door"


def test_events_of_note_are_the_named_sounds_with_enough_confidence():
    assert notable(SIREN) and notable({"label": "Fire_alarm", "name": "Fire alarm", "confidence": 0.5})
    assert notable({"label": "Glass", "confidence": 0.31})
    assert not notable(SPEECH) and not notable({"label": "Dog", "name": "Dog", "confidence": 0.99})
    assert not notable({**SIREN, "confidence": 0.2})
    assert cards_of(second(events_closed=[SPEECH]), "j", "cam") == []


def test_a_repeat_within_the_cooldown_merges_into_the_card(tmp_path):
    store = Store(tmp_path / "merge.db")

    def fire(t: float) -> tuple[int, bool]:
        return store.add_or_merge_card(cards_of(second(t, alerts=[{**ALERT, "time": t}]), "j", "cam")[0])

    first, merged = fire(10.0)
    assert not merged
    again, merged = fire(50.0)
    card = store.review_card(first)
    assert merged and again == first and card["count"] == 2 and card["last_time"] == 50.0
    assert card["time"] == 10.0 and card["last_wall"] == 1_700_000_050.0
    # the cool-down runs from the last firing: 50 + 60 still merges, beyond it is a new card
    fire(110.0)
    assert store.count_cards() == 1 and store.review_card(first)["count"] == 3
    late, merged = fire(171.0)
    assert not merged and store.count_cards() == 2 and store.review_card(late)["count"] == 1


def test_other_things_other_jobs_and_reviewed_cards_do_not_merge():
    base = Card("j", "cam", "alert", "rule a", "rule a", "why", 10.0, 1.0)
    assert merges(base, Card("j", "cam", "alert", "rule a", "rule a", "why", 10.0 + COOLDOWN_S, 2.0))
    assert not merges(base, Card("j", "cam", "alert", "rule b", "rule b", "why", 11.0, 2.0))
    assert not merges(base, Card("k", "cam", "alert", "rule a", "rule a", "why", 11.0, 2.0))
    assert not merges(base, Card("j", "cam", "watch", "rule a", "rule a", "why", 11.0, 2.0))
    assert not merges({**base.__dict__, "reviewed": True}, Card("j", "cam", "alert", "rule a", "", "", 11.0, 2.0))
    assert not merges(None, base)


def test_thumbnails_are_320_px_wide_jpegs():
    small = Image.open(io.BytesIO(thumbnail(jpeg(640, 360))))
    assert small.format == "JPEG" and small.size == (320, 180)
    assert Image.open(io.BytesIO(thumbnail(jpeg(200, 100)))).size == (200, 100)  # never scaled up
    assert thumbnail(None) is None and thumbnail(b"not a picture") is None


def test_store_adds_merges_filters_pages_and_marks_reviewed(tmp_path):
    store = Store(tmp_path / "r.db")
    made = [Card("j1", "cam-a", "alert", "fire", "fire", "smoke", 10.0, 100.0, thumbnail=jpeg()),
            Card("j1", "cam-a", "alert", "fire", "fire", "smoke", 40.0, 130.0),  # a repeat: merges
            Card("j1", "cam-a", "watch", "a dog", "a dog", "matched", 45.0, 135.0),
            Card("j2", "cam-b", "crossing", "gate|person|a_to_b", "person crossed gate", "#1", 5.0, 140.0)]
    ids = [store.add_or_merge_card(c) for c in made]
    assert [m for _, m in ids] == [False, True, False, False] and ids[0][0] == ids[1][0]
    assert made[1].id == made[0].id and made[1].count == 2
    assert store.count_cards() == 3
    assert [c["kind"] for c in store.review_cards()] == ["crossing", "watch", "alert"]  # newest first
    fire = store.review_card(ids[0][0])
    assert fire["count"] == 2 and fire["time"] == 10.0 and fire["last_time"] == 40.0 and fire["last_wall"] == 130.0
    assert fire["has_thumbnail"] and store.card_thumbnail(fire["id"]) == made[0].thumbnail
    assert store.card_thumbnail(ids[2][0]) is None and store.card_thumbnail(999) is None
    assert [c["kind"] for c in store.review_cards(kind="alert")] == ["alert"]
    assert [c["source"] for c in store.review_cards(source="cam-b")] == ["cam-b"]
    assert store.review_sources() == ["cam-a", "cam-b"]
    assert [c["kind"] for c in store.review_cards(limit=1, offset=1)] == ["watch"]
    assert store.set_reviewed(fire["id"]) and not store.set_reviewed(12345)
    assert [c["kind"] for c in store.review_cards(reviewed=True)] == ["alert"]
    assert store.count_cards(reviewed=False) == 2 and store.review_card(fire["id"])["reviewed_at"] is not None
    # a firing after someone reviewed the card starts a new one
    _, merged = store.add_or_merge_card(Card("j1", "cam-a", "alert", "fire", "fire", "smoke", 50.0, 150.0))
    assert not merged and store.count_cards(kind="alert") == 2
    assert store.set_reviewed(fire["id"], False) and not store.review_card(fire["id"])["reviewed"]
    # saving the job's result replaces its rows, not its cards
    store.save_result("j1", {"source": "cam-a", "events": [], "transcript": [], "alerts": []})
    assert store.count_cards(job_id="j1") == 3


def test_an_old_database_gains_the_review_table(tmp_path):
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE sources (id TEXT PRIMARY KEY, uri TEXT NOT NULL, kind TEXT NOT NULL, "
                   "created_at REAL NOT NULL)")
        db.execute("INSERT INTO sources VALUES ('s1', 'rtsp://cam', 'rtsp', 1.0)")
    store = Store(path)
    assert store.count_cards() == 0
    card_id, _ = store.add_or_merge_card(Card("j", "cam", "watch", "q", "q", "why", 1.0, 2.0))
    store.close()
    reopened = Store(path)  # opening it again keeps the cards
    assert reopened.review_card(card_id)["title"] == "q"
    assert reopened.db.execute("SELECT uri FROM sources").fetchone()[0] == "rtsp://cam"


def test_the_sink_writes_cards_with_the_last_picture_as_thumbnail(tmp_path):
    db = tmp_path / "s.db"
    job = Store(db).create_job("stream", "cam")
    sink = Sink("cam", job_id=job, db_path=str(db), feed_size=4)
    sink.write(second(9.0, picture=jpeg(colour=(10, 200, 10))))  # no card: its picture is remembered
    sink.write(second(10.0, alerts=[{**ALERT, "time": 10.0}]))
    sink.write(second(30.0, alerts=[{**ALERT, "time": 30.0}], picture=jpeg(colour=(10, 10, 200))))
    sink.write(second(31.0, moments=[WATCH], events_closed=[SPEECH]))
    store = Store(db)
    cards = store.review_cards(job_id=job)
    assert [(c["kind"], c["count"]) for c in cards] == [("watch", 1), ("alert", 2)]
    thumb = Image.open(io.BytesIO(store.card_thumbnail(cards[1]["id"])))
    assert thumb.size == (320, 180)
    assert thumb.getpixel((160, 90))[1] > 150  # the green picture of the second before the alert's first firing
    assert store.rows("alerts", job)  # live rows as before


def test_a_sink_with_live_rows_off_keeps_only_cards(tmp_path):
    store = Store(":memory:")
    sink = Sink("clip.mp4", job_id="j", store=store, live_rows=False)
    sink.write(second(10.0, alerts=[{**ALERT, "time": 10.0}], events_closed=[SIREN]))
    assert store.count_cards(job_id="j") == 2 and store.rows("alerts", "j") == [] and store.rows("events", "j") == []


def test_the_final_record_raises_cards_too():
    store = Store(":memory:")
    sink = Sink("clip.mp4", job_id="j", store=store, live_rows=False)
    record = Second.closing()
    record.events_closed = [SIREN]
    sink.write(record)
    (card,) = store.review_cards()
    assert card["kind"] == "event" and card["wall_time"] > 1_600_000_000  # the final record has no wall time


def test_the_final_records_feed_item_comes_at_the_streams_end():
    """The end-of-stream record has no second of its own; what it brings (the last transcript lines, events closed
    at the end) reaches live subscribers at the stream's end, not at `time: null`."""
    sink = Sink("cam", feed_size=8)
    sink.write(second(0.0))
    sink.write(second(1.0))
    final = Second.closing()
    final.transcript = [{"start": 1.2, "end": 1.9, "text": "goodbye"}]
    sink.write(final)
    assert [(item["time"], len(item["transcript"])) for _, item in sink.feed_since(0)] == [(1.0, 0), (2.0, 0), (2.0, 1)]
