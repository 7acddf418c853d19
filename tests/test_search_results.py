"""The search results page and the recordings by the clock, shaped without Streamlit (ui/hits.py,
ui/recordings.py): identical hits folded, pages, mm:ss and wall-clock labels, thumbnails decoded from the demo
clip and from a real recording of it, what the retention deleted said in words, and a jump to a wall-clock
time that lands on the recording's picture of that time. Also the search service's own dedupe."""

from __future__ import annotations

import datetime as dt
import io
import time

import av
import numpy as np
import pytest
from PIL import Image

from app.services.recordings import RecordedSpan, Retention, clip_for_job, recorded_span
from pipelines.media.ingest import SegmentReader
from pipelines.media.ingest_stats import ReconnectPolicy
from pipelines.media.recorder import LOG_NAME, RecordConfig, Recorder, list_segments, read_log, segment_start
from pipelines.media.sources import parse_source
from pipelines.sinks.review import Card
from pipelines.sinks.store import Store
from ui.hits import dedupe, frame_jpeg, page_of, page_summary, recording_frame, span_label, when_label
from ui.recordings import recorded_runs, retention_note, scrubber_chart, scrubber_frame, wall_at


def hit(job: str, source: str, start: float, end: float, score: float, kind: str = "speech") -> dict:
    return {"job_id": job, "source": source, "start": start, "end": end, "score": score, "kind": kind, "text": "x"}


def test_identical_hits_are_folded_into_the_best_one():
    hits = [hit("a", "demo.mp4", 10.0, 12.0, 0.9), hit("a", "demo.mp4", 10.0, 12.0, 0.8, "audio"),
            hit("b", "demo.mp4", 10.0, 11.0, 0.7),  # the same file analysed again: same source and start
            hit("a", "demo.mp4", 14.0, 15.0, 0.6), hit("c", "cam", 10.0, 12.0, 0.5),
            hit("c", "cam", 10.4, 12.9, 0.4, "visual")]  # reads "00:10-00:12" too
    kept = dedupe(hits)
    assert [(h["job_id"], h["start"], h["score"]) for h in kept] == [("a", 10.0, 0.9), ("a", 14.0, 0.6),
                                                                       ("c", 10.0, 0.5)]
    assert [h["repeats"] for h in kept] == [2, 0, 1]
    assert dedupe([]) == [] and "repeats" not in hits[0]  # the input is left as it was


def test_pages_of_ten_up_to_the_last():
    hits = [hit("a", "s", float(i), i + 1.0, 1 - i / 100) for i in range(23)]
    first, page, pages = page_of(hits, 0)
    assert len(first) == 10 and (page, pages) == (0, 3) and first[0]["start"] == 0.0
    last, page, _ = page_of(hits, 7)  # past the end: the last page
    assert page == 2 and [h["start"] for h in last] == [20.0, 21.0, 22.0]
    assert page_of(hits, -1)[1] == 0 and page_of([], 3)[1:] == (0, 1)
    assert page_summary(23, 2, 3) == "results 21-23 of 23 (page 3 of 3)"
    assert page_summary(0, 0, 1) == "no moments found"


def test_times_are_mm_ss_and_by_the_clock():
    today = dt.date(2026, 12, 2)
    noon = dt.datetime(2026, 12, 2, 12, 0, 0).timestamp()
    h = hit("a", "cam", 77.77, 81.2, 0.5)
    assert span_label(h) == "01:17-01:21"
    live = {"kind": "dashboard-live", "created_at": noon}
    # the recording's clock: its segment at stream time 60 s began at 12:30:00 (the stream began late)
    span = RecordedSpan(0.0, 120.0, [(0.0, noon + 1740.0), (60.0, noon + 1800.0)])
    assert when_label(h, live, span, today) == "at 12:30:17"
    assert when_label(h, live, None, today) == "at ≈12:01:17"  # no recording log: the job's start + stream time
    assert when_label(h, {"kind": "upload", "created_at": noon}, None, today) == "file analysed 12:00:00"
    assert when_label(h, live, span, dt.date(2026, 12, 3)) == "at 2026-12-02 12:30:17"


def jpeg_size(data: bytes) -> tuple[int, int]:
    image = Image.open(io.BytesIO(data))
    assert image.format == "JPEG"
    return image.size


def frame_at(path, t: float, offset: float = 0.0) -> np.ndarray:
    """The frame shown at `t`, decoded from the start of the file (no seeking), at thumbnail size."""
    with av.open(str(path)) as container:
        shown = None
        for frame in container.decode(video=0):
            if frame.time > t + offset + 1e-3 and shown is not None:
                break
            shown = frame
    image = shown.to_image()
    image.thumbnail((160, 640))
    return np.asarray(image.convert("RGB"), dtype=int)


def test_thumbnail_is_the_frame_at_the_hits_start(demo_clip):
    path = demo_clip[0]
    for t, other in ((0.0, 17.0), (10.0, 1.0), (17.77, 1.0)):  # a slideshow: `other` shows another picture
        data = frame_jpeg(path, t)
        assert jpeg_size(data) == (160, 90)
        shown = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"), dtype=int)
        assert np.abs(shown - frame_at(path, t)).mean() < 8.0, t  # only JPEG's loss
        assert np.abs(shown - frame_at(path, other)).mean() > 20.0, t
    assert frame_jpeg(path, 10.0) is frame_jpeg(path, 10.0)  # cached: decoded once
    assert frame_jpeg(path.parent / "missing.mp4", 1.0) is None


@pytest.fixture(scope="module")
def recording(demo_clip, tmp_path_factory):
    """The demo clip read as a live source for 20 s of stream time, recorded in 2-s segments, as job `job-1`."""
    root = tmp_path_factory.mktemp("rec")
    store = Store(root / "t.db")
    job_id = store.create_job("dashboard-live", "rtsp://127.0.0.1/cam", job_id="job-1")
    spec = parse_source(str(demo_clip[0]), live=True)
    began = time.time()
    reader = SegmentReader(spec, "demo", duration_s=20.0, policy=ReconnectPolicy(initial_s=0.05, jitter=0.0),
                           record=RecordConfig(str(root / "recordings" / job_id), segment_s=2.0)).start()
    while reader.get(timeout=60) is not None:
        pass
    return store, root / "recordings", job_id, began, time.time()


def test_a_recording_keeps_its_wall_clock_and_says_what_the_retention_deleted(recording, tmp_path):
    import shutil

    store, root, job_id, began, ended = recording
    folder = root / job_id
    log = read_log(folder)
    assert set(log["wall"]) == {p.name for p in list_segments(folder)} and log["deleted"]["count"] == 0
    span = recorded_span(store, root, job_id)
    assert not span.approximate and span.start < 1.0 and span.end > 19.0
    # each kept segment's wall clock is when it was written (a file read as a live source runs faster than
    # real time, so the clock between segments is the segments' own)
    walls = [w for _, w in span.anchors]
    assert len(walls) == len(list_segments(folder)) and walls == sorted(walls) and began <= walls[0] <= walls[-1] <= ended
    assert span.wall(span.start) == walls[0] and span.wall(17.0) == walls[-2] + 1.0
    assert recorded_runs(span)[0][0] == span.wall(span.start)
    note = retention_note(span, Retention(minutes=60, gb=2))
    assert note.startswith("recorded ") and "nothing deleted yet (the retention keeps 60 min / 2 GB)" in note

    copy = tmp_path / "recordings" / job_id
    shutil.copytree(folder, copy)
    kept_before = len(list_segments(copy))
    deleted = Recorder(RecordConfig(str(copy), keep_minutes=0.1)).prune()  # keeps the newest 6 s
    log = read_log(copy)
    assert deleted and log["deleted"]["count"] == len(deleted) == kept_before - len(list_segments(copy))
    assert set(log["wall"]) == {p.name for p in list_segments(copy)}
    span = recorded_span(store, tmp_path / "recordings", job_id)
    assert span.deleted == len(deleted) and span.deleted_span[1] == span.start
    note = retention_note(span, Retention(minutes=0.1, gb=2))
    lost = span.deleted_span[1] - span.deleted_span[0]
    assert f"; {lost:.0f} s older than the retention (0.1 min / 2 GB) were deleted ({len(deleted)} segments)" in note
    frame = scrubber_frame(span, [{"label": "Telephone_bell_ringing", "start": 10.0, "end": 11.0}],
                           [{"time": 12.0, "severity": "warning", "rule": "r"}],
                           [{"query": "a phone rings", "start": 10.0, "end": 12.0}])
    assert set(frame["kind"]) == {"recorded", "deleted", "event", "alert", "watch"}
    assert frame[frame["kind"] == "event"].iloc[0]["name"] == "Telephone bell ringing"
    spec = scrubber_chart(frame, dt.datetime.fromtimestamp(span.wall(15.0))).to_dict()
    assert spec["layer"][0]["encoding"]["x"]["axis"]["format"] == "%H:%M:%S"
    (copy / LOG_NAME).write_text("not json")  # a broken log costs the clock, never the recording
    assert recorded_span(store, tmp_path / "recordings", job_id).approximate


def camera_clock(folder) -> float:
    """Rewrite a recording's log as a camera's that began at 12:00:00 today and was away for a minute after 10 s of
    stream time; returns that noon (epoch s)."""
    import json

    noon = dt.datetime.combine(dt.date.today(), dt.time(12)).timestamp()
    wall = {p.name: noon + segment_start(p) + (60.0 if segment_start(p) >= 10.0 else 0.0) for p in list_segments(folder)}
    (folder / LOG_NAME).write_text(json.dumps({"wall": wall, "deleted": {"count": 0}}))
    return noon


def test_jump_to_a_wall_clock_time_plays_the_recording_from_there(recording, tmp_path):
    """A camera recorded from 12:00:00 that was away for a minute after 10 s of stream time (a file is read
    faster than real time, so its log is rewritten to a real camera's clock, `camera_clock`)."""
    import shutil

    store, root, job_id, _, _ = recording
    copy = tmp_path / "recordings" / job_id
    shutil.copytree(root / job_id, copy)
    noon = camera_clock(copy)
    span = recorded_span(store, tmp_path / "recordings", job_id)
    runs = recorded_runs(span)
    assert [(round(a - noon), round(b - noon)) for a, b in runs] == [(0, 10), (70, round(span.end) + 60)]
    assert retention_note(span, Retention()).startswith("recorded 12:00:00-12:01:19 (00:19)")
    epoch = wall_at("12:01:12", span)
    assert epoch == noon + 72.0
    t = span.stream(epoch)
    assert t == pytest.approx(12.0)
    assert span.stream(wall_at("12:00:05", span)) == pytest.approx(5.0)
    clip = clip_for_job(store, tmp_path / "recordings", job_id, t, t + 5.0)
    assert t - 2.5 <= clip.start <= t
    with av.open(io.BytesIO(clip.data)) as container:  # the clip's picture at t is the recording's at t
        first = None
        for frame in container.decode(video=0):
            if frame.time > clip.offset(t) + 1e-3 and first is not None:
                break
            first = frame
    image = first.to_image()
    image.thumbnail((160, 640))
    shown = np.asarray(image.convert("RGB"), dtype=int)
    thumb = np.asarray(Image.open(io.BytesIO(recording_frame(copy, t))).convert("RGB"), dtype=int)
    early = np.asarray(Image.open(io.BytesIO(recording_frame(copy, 1.0))).convert("RGB"), dtype=int)
    assert np.abs(shown - thumb).mean() < 8.0 and np.abs(shown - early).mean() > 20.0
    for bad in ("25:00:00", "noon"):
        with pytest.raises(ValueError, match="is not a time of day"):
            wall_at(bad, span)
    with pytest.raises(ValueError, match=r"11:59:00 is not in the recording \(12:00:00-12:01:19\)"):
        wall_at("11:59:00", span)


def test_search_returns_one_hit_per_span_of_a_job(tmp_path):
    from app.services.search import SearchService

    store = Store(tmp_path / "s.db")
    job = store.create_job("dashboard", "demo.mp4")
    store.append_rows(job, "demo.mp4", [{"label": "Telephone_bell_ringing", "modality": "audio", "start": 10.0,
                                         "end": 12.0, "confidence": 0.9}],
                      [{"start": 10.0, "end": 12.0, "text": "the telephone is ringing"}])
    moments = SearchService(store).search("telephone ringing", top_k=5)["moments"]
    assert [(m["job_id"], m["start"], m["end"]) for m in moments] == [(job, 10.0, 12.0)], moments


def test_dashboard_search_page_and_recordings_scrubber(recording, demo_clip, tmp_path, monkeypatch):
    """The real dashboard under AppTest on a store holding a stopped camera's job and its recording: the search
    hit shows mm:ss, the recording's clock, a thumbnail and a Play that plays the recording from 3 s before; the
    review card of the same moment plays the same seconds in a player of its own; the Recordings expander says
    what is kept and plays from a typed wall-clock time."""
    import shutil
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    from ui.search import hit_key

    _, root, job_id, _, _ = recording
    db = tmp_path / "dash.db"
    store = Store(db)
    store.create_job("dashboard-live", "rtsp://127.0.0.1:8554/cam", job_id=job_id)
    store.update_job(job_id, status="stopped")
    store.append_rows(job_id, "rtsp://127.0.0.1:8554/cam",
                      [{"label": "Telephone_bell_ringing", "modality": "audio", "start": 10.4, "end": 11.3,
                        "confidence": 0.8}], [{"start": 1.0, "end": 8.8, "text": "The phone is ringing in the kitchen."}])
    card = Card(job_id, "rtsp://127.0.0.1:8554/cam", "watch", "a telephone rings", "a telephone rings",
                "the last seconds matched it at 00:10-00:11 (score 0.80)", 10.4, 1_700_000_000.0)
    store.add_or_merge_card(card)
    shutil.copytree(root / job_id, tmp_path / "recordings" / job_id)
    camera_clock(tmp_path / "recordings" / job_id)
    monkeypatch.setenv("FORESIGHT_DB", str(db))
    monkeypatch.setenv("FORESIGHT_KEEP_DAYS", "0")  # the camera's clock is of 2023: kept whatever its age
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "ui" / "dashboard.py"), default_timeout=120).run()
    assert not at.exception, at.exception

    at.text_input(key="query").input("telephone ringing").run()
    assert not at.exception, at.exception
    moments = at.session_state["moments"]
    bell = next(m for m in moments if m["kind"] == "audio")
    rows = [m.value for m in at.markdown if m.value.startswith("**00:")]
    assert "**00:10-00:11** · rtsp://127.0.0.1:8554/cam · at 12:01:10 · score " in "\n".join(rows), rows
    assert len(at.get("image")) == len(moments)  # each hit's first frame, from the recording
    at.button(key=f"hit_play_{hit_key(bell)}").click().run()
    videos = at.get("video")
    assert len(videos) == 1 and videos[0].proto.autoplay and videos[0].proto.muted
    said = [c.value for c in at.caption if c.value.startswith("from the recording (")]
    assert said and "playing from 00:07, 3 s before the moment" in said[0], said
    # the review card of that moment plays the same seconds of the recording from the same second: two players of
    # one clip on one page, each autoplaying (one name for both stopped the page: StreamlitDuplicateElementId)
    at.button(key=f"review_play_{card.id}").click().run()
    assert not at.exception, at.exception
    videos = at.get("video")
    assert len(videos) == 2 and all(v.proto.autoplay and v.proto.muted for v in videos)
    assert videos[0].proto.url == videos[1].proto.url and videos[0].proto.start_time == videos[1].proto.start_time
    assert videos[0].proto.id != videos[1].proto.id

    assert any("recorded 12:00:00-12:01:19 (00:19); nothing deleted yet (the retention keeps 60 min / 2 GB)"
               in c.value for c in at.caption), [c.value for c in at.caption]
    at.text_input(key=f"rec_jump_{job_id}").input("12:01:12").run()
    at.button(key=f"rec_play_{job_id}").click().run()
    assert not at.exception, at.exception
    assert any(c.value == "playing the recording from 12:01:12 (stream time 00:12)" for c in at.caption)
    assert len(at.get("video")) == 3 and at.get("video")[-1].proto.autoplay
    at.text_input(key=f"rec_jump_{job_id}").input("11:00:00").run()
    at.button(key=f"rec_play_{job_id}").click().run()
    assert any("11:00:00 is not in the recording (12:00:00-12:01:19)" in w.value for w in at.warning)


    # more hits than a page: ten at a time, Prev and Next, and a new query starts again at its first page
    store.append_rows(job_id, "rtsp://127.0.0.1:8554/cam", [], [{"start": 20.0 + 2 * i, "end": 21.0 + 2 * i,
                                                                 "text": f"phone call number {i}"} for i in range(24)])
    at.text_input(key="query").input("a phone call").run()
    assert any(c.value == "results 1-10 of 26 (page 1 of 3)" for c in at.caption), [c.value for c in at.caption]
    assert len(at.get("image")) == 10
    next(b for b in at.button if b.label == "Next ▶").click().run()
    assert any(c.value == "results 11-20 of 26 (page 2 of 3)" for c in at.caption)
    next(b for b in at.button if b.label == "Next ▶").click().run()
    assert any(c.value == "results 21-26 of 26 (page 3 of 3)" for c in at.caption)
    assert next(b for b in at.button if b.label == "Next ▶").disabled
    next(b for b in at.button if b.label == "◀ Prev").click().run()
    assert any(c.value == "results 11-20 of 26 (page 2 of 3)" for c in at.caption)
    at.text_input(key="query").input("phone call number").run()
    assert any(c.value.startswith("results 1-10 of ") for c in at.caption)
