"""The dashboard's review panel under Streamlit's AppTest, on a real SQLite store: cards with thumbnail, times and
why; filters by kind, camera and state; Mark reviewed; Play opens the file from a few seconds before, autoplaying
and muted. (The live stream, its recording and the real browser: tests/test_ui_streams.py.)"""

from __future__ import annotations

import io
import re

from PIL import Image

from pipelines.sinks.review import KINDS, Card, thumbnail
from pipelines.sinks.store import Store
from ui.review import KIND_NAMES, card_lines, clock


def panel_app(db: str) -> None:
    """The script AppTest runs: the review panel alone, with no streams."""
    from types import SimpleNamespace

    from pipelines.sinks.store import Store
    from ui.review import review_panel

    review_panel(Store(db), SimpleNamespace(list=lambda: [], unfinished=lambda: 0))


def seed(tmp_path) -> tuple[Store, dict[str, int], str]:
    store = Store(tmp_path / "dash.db")
    clip = tmp_path / "kitchen.mp4"
    clip.write_bytes(b"\x00" * 64)  # the player is given the path; nothing decodes it here
    job = store.create_job("dashboard", "kitchen.mp4")
    store.save_result(job, {"source": "kitchen.mp4", "events": [], "transcript": [], "alerts": [],
                            "media_path": str(clip)})
    out = io.BytesIO()
    Image.new("RGB", (640, 360), (200, 20, 20)).save(out, format="JPEG")
    cards = {"alert": Card(job, "kitchen.mp4", "alert", "fire", "Leave the building", "a smoke alarm sounds", 12.0,
                           1_700_000_000.0, severity="critical", thumbnail=thumbnail(out.getvalue())),
             "watch": Card("stream-x", "rtsp://cam/door", "watch", "a dog barks", "a dog barks",
                           "the last seconds matched it at 00:40-00:44 (score 0.70)", 40.0, 1_700_000_100.0)}
    for card in cards.values():
        store.add_or_merge_card(card)
    store.add_or_merge_card(Card(job, "kitchen.mp4", "alert", "fire", "Leave the building", "again", 30.0,
                                 1_700_000_018.0))
    return store, {k: c.id for k, c in cards.items()}, str(clip)


def shown_cards(at) -> list[str]:
    return [b.key for b in at.button if b.key and b.key.startswith("review_play_")]


def test_cards_filters_mark_reviewed_and_play(tmp_path):
    from streamlit.testing.v1 import AppTest

    store, ids, clip = seed(tmp_path)
    at = AppTest.from_function(panel_app, args=(str(store.path),), default_timeout=60).run()
    assert not at.exception, at.exception
    assert shown_cards(at) == [f"review_play_{ids['watch']}", f"review_play_{ids['alert']}"]  # newest first
    text = " ".join(m.value for m in at.markdown)
    assert "**Leave the building** · alert · critical" in text and "a smoke alarm sounds" in text
    assert f"{clock(1_700_000_000.0)} · stream 00:12 · kitchen.mp4 · fired 2×, last at 00:30" in text
    assert len(at.get("image")) == 1 and "no picture" in [c.value for c in at.caption]  # the watch has none

    at.radio(key="review_kind").set_value("watch").run()
    assert shown_cards(at) == [f"review_play_{ids['watch']}"]
    at.radio(key="review_kind").set_value("all").run()
    at.selectbox(key="review_camera").set_value("kitchen.mp4").run()
    assert shown_cards(at) == [f"review_play_{ids['alert']}"]
    at.selectbox(key="review_camera").set_value("all cameras").run()

    at.button(key=f"review_mark_{ids['alert']}").click().run()
    assert not at.exception, at.exception
    assert shown_cards(at) == [f"review_play_{ids['watch']}"] and store.review_card(ids["alert"])["reviewed"]
    at.radio(key="review_state").set_value("reviewed").run()
    assert shown_cards(at) == [f"review_play_{ids['alert']}"]
    assert at.button(key=f"review_mark_{ids['alert']}").label == "Mark unreviewed"

    at.button(key=f"review_play_{ids['alert']}").click().run()
    assert not at.exception, at.exception
    (video,) = at.get("video")
    assert video.proto.start_time == 9 and video.proto.autoplay and video.proto.muted  # 3 s before 00:12
    assert any("playing the file from 00:09, 3 s before 00:12" in c.value for c in at.caption)
    at.radio(key="review_state").set_value("all").run()
    at.button(key=f"review_play_{ids['watch']}").click().run()  # a live job without a recording
    assert not at.get("video") and any("nothing to play" in w.value for w in at.warning)


def test_an_empty_feed_says_what_will_come(tmp_path):
    from streamlit.testing.v1 import AppTest

    Store(tmp_path / "empty.db")
    at = AppTest.from_function(panel_app, args=(str(tmp_path / "empty.db"),), default_timeout=60).run()
    assert not at.exception and "Review" in [s.value for s in at.subheader]
    assert any(c.value.startswith("Nothing to review yet") for c in at.caption)


def test_card_lines_name_every_kind_and_the_times():
    assert set(KIND_NAMES) == {"all", *KINDS}
    head, times = card_lines({"title": "person crossed gate", "kind": "crossing", "severity": None,
                              "wall_time": 1_700_000_000.0, "time": 75.0, "source": "cam", "count": 1})
    assert head == "**person crossed gate** · line crossing" and re.fullmatch(r"\d\d:\d\d:\d\d · stream 01:15 · cam",
                                                                            times)


def test_older_cards_are_a_page_away(tmp_path):
    from streamlit.testing.v1 import AppTest

    store = Store(tmp_path / "many.db")
    for i in range(13):
        store.add_or_merge_card(Card("j", "cam", "crossing", f"gate{i}|person|a_to_b", f"person crossed gate{i}",
                                     "#1", float(i), 1_700_000_000.0 + i))
    at = AppTest.from_function(panel_app, args=(str(store.path),), default_timeout=60).run()
    first = shown_cards(at)
    assert len(first) == 10 and any(c.value == "cards 1-10 of 13" for c in at.caption)
    assert at.button(key="review_newer").disabled
    at.button(key="review_older").click().run()
    assert len(shown_cards(at)) == 3 and not set(shown_cards(at)) & set(first)
    assert any(c.value == "cards 11-13 of 13" for c in at.caption) and at.button(key="review_older").disabled
    at.button(key="review_newer").click().run()
    assert shown_cards(at) == first
