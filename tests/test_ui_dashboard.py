"""The dashboard under Streamlit's AppTest: file analysis fills the timeline, transcript and search panels."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from models.errors import BadInput
from pipelines.sinks.store import Store
from tests.helpers.cli import free_port
from ui.data import LiveState, alert_lines, detections_text, moments_frame, rolling_transcript
from ui.search import hit_key
from ui.timeline import human_label, mmss, outage_events, timeline_chart, timeline_frame

APP = str(Path(__file__).resolve().parents[1] / "ui" / "dashboard.py")


def test_timeline_has_a_lane_per_modality_with_human_names_and_one_click_selection():
    events = [{"label": "Speech", "modality": "audio", "start": 1.0, "end": 4.0, "confidence": 0.9},
              {"label": "person", "modality": "visual", "start": 0.0, "end": 2.0, "confidence": 0.6},
              {"label": "Telephone_bell_ringing", "modality": "audio", "start": 70.0, "end": 70.2, "confidence": 0.7}]
    spec = timeline_chart(events, 100.0).to_dict()
    lanes = spec["vconcat"]
    assert [lane["title"]["text"] for lane in lanes] == ["audio", "visual", "audio-visual"]
    assert all("layer" not in lane and lane["mark"]["type"] == "bar" for lane in lanes)  # nothing to union
    assert lanes[0]["encoding"]["y"]["sort"] == ["Speech", "Telephone bell ringing"]
    assert lanes[0]["encoding"]["x"]["scale"]["domain"] == [0, 100.0]
    params = {p["name"]: p for p in spec["params"]}
    assert len(params["pick"]["views"]) == 3 and params["pick"]["select"]["on"] == "click"
    assert params["zoom"]["bind"] == "scales" and params["zoom"]["select"]["encodings"] == ["x"]  # wheel zoom, all lanes
    assert len(params["zoom"]["views"]) == 3
    frame = timeline_frame(events, 100.0)
    bell = frame[frame["name"] == "Telephone bell ringing"].iloc[0]
    assert bell["when"] == "01:10-01:10" and bell["shown_end"] > bell["end"]  # short events stay visible
    assert list(frame[frame["lane"] == "audio-visual"]["name"]) == ["(no events)"]
    assert [p["name"] for p in timeline_chart([], None, selectable=False).to_dict()["params"]] == ["zoom"]
    assert human_label("dog__bark") == "Dog bark" and mmss(3725) == "1:02:05"


def test_outages_get_a_lane_of_their_own_with_their_true_length():
    """A camera away from 12.4 s for 60 s: a fourth lane shows the gap, the axis reaches past it, and while the
    source is still away the gap runs on to now."""
    import time

    from ui.panels import outage_gaps

    events = [{"label": "Speech", "modality": "audio", "start": 1.0, "end": 4.0, "confidence": 0.9}]
    health = {"health": "live", "lost_intervals": [[12.4, 72.4]]}
    lanes = timeline_chart(events, 80.0, gaps=outage_gaps(health)).to_dict()["vconcat"]
    assert [lane["title"]["text"] for lane in lanes] == ["audio", "visual", "audio-visual", "outages"]
    frame = timeline_frame(events + outage_events(outage_gaps(health)), 80.0)
    gap = frame[frame["lane"] == "outages"].iloc[0]
    assert (gap["start"], gap["end"], gap["when"]) == (12.4, 72.4, "00:12-01:12 (60 s)")
    assert len(timeline_chart(events, 80.0).to_dict()["vconcat"]) == 3  # no outages, no fourth lane
    away = {"health": "reconnecting", "lost_intervals": [], "outage_since": time.time() - 30}
    (start, end), = outage_gaps(away, now_s=20.0)
    assert start == 20.0 and 49.0 < end < 52.0


def test_live_state_keeps_only_new_feed_items_and_the_latest_tags():
    live = LiveState(max_items=3)
    item = {"time": 1.0, "events": [{"label": "A"}], "transcript": [{"start": 0.5, "end": 1, "text": "hi"}],
            "tags": {"Speech": 0.9}, "alerts": []}
    assert live.update([(1, item), (2, {**item, "time": 2.0, "tags": {"Bell": 0.5}})]) == 2
    assert live.update([(2, item)]) == 0  # already seen
    live.update([(3, item), (4, item)])
    assert live.seq == 4 and live.time == 1.0 and live.tags == {"Speech": 0.9}
    assert len(live.events) == 3  # bounded
    assert rolling_transcript([{"start": 65.0, "end": 66, "text": "later"}, {"start": 1.0, "end": 2, "text": "first"}],
                              1) == ["[01:05] later"]
    many = [{"start": float(t), "end": t + 1.0, "text": f"line {t}"} for t in range(30)]
    assert len(rolling_transcript(many)) == 30 and rolling_transcript(many)[0] == "[00:00] line 0"  # a file: all
    frame = moments_frame([{"source": "a.mp4", "start": 1, "end": 2, "score": 0.5, "text": "x", "method": "text-match",
                            "modality_weights": {"visual": 0.1, "audio": 0.2, "speech": 0.7}}])
    assert frame.loc[0, ["visual", "audio", "speech"]].tolist() == [0.1, 0.2, 0.7]


@pytest.mark.slow
def test_file_analysis_fills_timeline_transcript_and_moments(demo_clip, tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    path, truth = demo_clip
    db = tmp_path / "dash.db"
    monkeypatch.setenv("FORESIGHT_DB", str(db))
    at = AppTest.from_file(APP, default_timeout=180).run()
    assert not at.exception
    assert "Choose a source" in at.info[0].value
    at.radio(key="kind").set_value("File on the server").run()
    at.text_input(key="path").input(str(path)).run()
    at.text_area(key="questions").input("a telephone is ringing\n\n").run()
    at.slider(key="safety").set_value(0.9).run()
    assert at.selectbox(key="detector").value == "ssd-mobilenetv2"  # the default detector
    at.selectbox(key="detector").set_value("nanodet").run()
    assert at.selectbox(key="pose").value == "movenet-multipose"  # the default pose model
    at.selectbox(key="pose").set_value("mediapipe").run()
    at.button(key="analyze_path").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    result = at.session_state["result"]
    answers = [m for m in result["moments"] if m["query"] == "a telephone is ringing"]
    assert answers and {m["query"] for m in result["moments"]} == {"a telephone is ringing"}
    assert "Answers" in {s.value for s in at.subheader}
    assert any(m.value.startswith("**a telephone is ringing**: 00:") for m in at.markdown)
    assert result["source"] == "demo.mp4" and any(e["label"] == "Speech" for e in result["events"])
    # NanoDet analysed it: its own reading of the demo's motorbike and coffee pictures (SSD finds neither)
    seen = {label for s in result["seconds"] for label in (s.get("objects") or {})}
    assert {"bicycle", "toilet"} & seen, seen
    # and MediaPipe: it calls the astronaut and the cameraman sitting or standing (it guesses hidden legs), where
    # MoveNet, the default, sees their hips too faintly to call a posture ("unknown")
    postures = [p for s in result["seconds"] for p in s["postures"]]
    assert {"sitting", "standing"} & set(postures), postures
    subheaders = {s.value for s in at.subheader}
    assert {"Timeline", "Transcript", "Alerts", "Search moments"} <= subheaders
    assert "Stream health" not in subheaders  # a file has no stream health
    charts = at.get("vega_lite_chart")
    assert len(charts) == 1
    assert "front door" in at.code[0].value.lower()
    job_id = at.session_state["job_id"]
    store = Store(db)
    assert store.job(job_id)["status"] == "done" and store.rows("events", job_id)

    at.text_input(key="query").input("telephone ringing").run()
    assert not at.exception, at.exception
    moments = at.session_state["moments"]
    assert moments[0]["job_id"] == job_id and moments[0]["method"] == "text-match"
    assert moments[0]["start"] < truth.phone[1] + 1 and moments[0]["end"] > truth.phone[0] - 1
    # a results page: each hit once, as mm:ss-mm:ss with its source, when the file was analysed, its score and
    # the matched text, a thumbnail of its first frame and a Play button; no player until one is clicked
    rows = [m.value for m in at.markdown if re.match(r"\*\*\d\d:\d\d-\d\d:\d\d\*\* · ", m.value)]
    shown = min(len(moments), 10)  # the first page
    assert len(rows) == shown > 1 and len({r.split("  ")[0] for r in rows}) == len(rows), rows
    assert re.match(r"\*\*\d\d:\d\d-\d\d:\d\d\*\* · demo\.mp4 · file analysed \d\d:\d\d:\d\d · score 0\.\d\d", rows[0])
    cards = [c for c in Store(db).review_cards(reviewed=False, limit=10) if c.get("has_thumbnail")]
    assert len(at.get("image")) == shown + len(cards)  # a thumbnail per hit, and per review card shown
    before = len(at.get("video"))  # the search's player appears only when a hit is played
    assert any(c.value.startswith(f"results 1-{shown} of {len(moments)}") for c in at.caption)
    at.button(key=f"hit_play_{hit_key(moments[1])}").click().run()
    videos = [v for v in at.get("video") if v.proto.start_time == int(max(0.0, moments[1]["start"] - 2.0))]
    assert len(at.get("video")) == before + 1 and videos, at.get("video")
    assert videos[0].proto.autoplay and videos[0].proto.muted
    at.text_input(key="query").input("front door").run()  # a new query: its own results, no player yet
    assert not at.exception, at.exception
    left = at.get("video")  # only the hit that was played, if the new query finds it too (its player stays)
    played = int(max(0.0, moments[1]["start"] - 2.0))
    assert all(v.proto.start_time == played for v in left) and len(left) <= 1, [v.proto.start_time for v in left]
    assert at.session_state["moments"][0]["job_id"] == job_id

@pytest.mark.slow
def test_a_file_analysed_in_part_says_why(demo_clip, tmp_path, monkeypatch):
    """A file cut short (an interrupted copy) is analysed as far as it goes, and the page says so; before, it
    read as a shorter clip, with the reason only in the JSON (`ingest.warnings`)."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("FORESIGHT_DB", str(tmp_path / "dash.db"))
    cut = tmp_path / "cut.mp4"
    data = demo_clip[0].read_bytes()
    cut.write_bytes(data[: len(data) // 3])
    at = AppTest.from_file(APP, default_timeout=180).run()
    at.radio(key="kind").set_value("File on the server").run()
    at.text_input(key="path").input(str(cut)).run()
    at.button(key="analyze_path").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.session_state["result"]["seconds"]
    assert [w.value for w in at.warning if "short of the 20.0 s its header declares" in w.value], at.warning


@pytest.mark.slow
def test_bad_path_shows_a_reason(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("FORESIGHT_DB", str(tmp_path / "dash.db"))
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"\x00garbage" * 100)
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.radio(key="kind").set_value("File on the server").run()
    at.text_input(key="path").input(str(bad)).run()
    at.button(key="analyze_path").click().run()
    assert not at.exception
    assert "not a readable media file" in at.error[0].value
    for text, said in [(str(tmp_path / "missing.mp4"), "no such file on the server"), (str(tmp_path), "is a folder"),
                       ("rtsp://camera/live", "is a URL, not a file"), ("hello there", "no such file on the server")]:
        at.text_input(key="path").input(text).run()
        at.button(key="analyze_path").click().run()
        assert said in at.error[0].value, (text, at.error[0].value)
    at.radio(key="kind").set_value("RTSP / HTTP URL").run()
    at.text_input(key="url").input(str(bad)).run()
    at.button(key="start_live").click().run()
    assert "use \"File on the server\" for a file" in at.error[0].value
    url = f"rtsp://127.0.0.1:{free_port()}/main"
    at.text_input(key="url").input(url).run()
    for detect, said in [(url, "the detect stream is the main source itself"), (str(bad), "not a file")]:
        at.text_input(key="detect_url").input(detect).run()  # refused before Ray or any connection starts
        at.button(key="start_live").click().run()
        assert said in at.error[0].value, (detect, at.error[0].value)


def test_detections_text_names_sounds_and_what_is_seen():
    visual = {"detections": [{"label": "person", "score": 0.9}, {"label": "cup", "score": 0.5}], "faces": 1,
              "camera_trouble": None}
    assert detections_text({"Speech": 0.8, "Music": 0.1}, visual) == \
        "sounds: Speech (0.80), Music (0.10) | seen: person (0.90), cup (0.50), faces: 1"
    assert detections_text({}, None) == "no detections this second"


def test_failure_hints_name_what_to_try():
    from ui.hints import failure_hint

    tcp = "rtsp://cam/live: could not connect (method SETUP failed: 400 Bad Request)"
    assert "try UDP" in failure_hint(tcp)
    assert "path" in failure_hint("could not connect (404 Not Found)")
    assert "nothing listens" in failure_hint("rtsp://127.0.0.1:9/x: connection refused")
    assert "reconnect budget" in failure_hint("stream stopped sending at 12.0 s and did not come back within 30 s")
    assert "credentials" in failure_hint("could not connect (401 Unauthorized)")
    assert failure_hint("internal error: KeyError('x')") is None and failure_hint(None) is None
    assert failure_hint("port 4610 is busy") is None  # status codes match as whole numbers only


def test_hints_follow_what_failed_a_source_that_worked_went_away():
    from ui.hints import failure_hint
    from ui.panels import had_data

    worked = had_data({"health": "reconnecting", "segments_emitted": 180, "reconnects": 0})
    assert worked and not had_data({"health": "connecting", "segments_emitted": 0})
    for reason in ("rtsp://127.0.0.1:9/x: connection refused", "could not connect (404 Not Found)",
                   "source ended", "[Errno 110] timed out"):
        hint = failure_hint(reason, had_data=worked)
        assert "went away" in hint or "stopped sending" in hint, reason
        assert "URL after the host" not in hint and "check the address" not in hint, reason
    assert "password" in failure_hint("401 Unauthorized", had_data=True)
    assert "reconnect budget" in failure_hint("stream stopped sending at 90.0 s and did not come back within 30 s",
                                              had_data=True)
    assert "path" in failure_hint("could not connect (404 Not Found)")  # never worked: the URL is the suspect


def test_alert_lines_have_mm_ss_the_full_reason_and_evidence():
    reason = "A person has been lying still for 12 s after a fall; " * 3
    lines = alert_lines([{"time": 68.4, "severity": "critical", "rule": "fall", "reason": reason, "lead_time_s": 4.0,
                          "evidence": ["t=56.0s fell", "t=68.0s still lying"]},
                         {"time": 5.0, "severity": "warning", "rule": "alarm", "reason": "alarm", "lead_time_s": None}])
    assert lines[0] == "**00:05** · warning · alarm: alarm"
    assert lines[1].startswith("**01:08** · critical · fall: " + reason) and "(lead time 4 s)" in lines[1]
    assert lines[1].endswith("_evidence: t=56.0s fell; t=68.0s still lying_")


def test_history_filters_reopens_and_exports_a_past_job(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    db = tmp_path / "dash.db"
    store = Store(db)
    bell = store.create_job("dashboard", "kitchen.mp4")
    store.save_result(bell, {"source": "kitchen.mp4", "duration_s": 20.0, "alerts": [], "transcript": [
        {"start": 1.0, "end": 2.0, "text": "hello"}], "events": [
        {"label": "Telephone_bell_ringing", "modality": "audio", "start": 10.0, "end": 12.0, "confidence": 0.8}]})
    failed = store.create_job("dashboard-live", "rtsp://cam/live")
    store.update_job(failed, status="failed", error="connection refused")
    monkeypatch.setenv("FORESIGHT_DB", str(db))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception, at.exception
    assert at.selectbox(key="hist_job").value == failed  # the latest first
    assert any("no saved result (failed: connection refused)" in c.value for c in at.caption)
    at.text_input(key="hist_label").input("telephone bell").run()
    assert at.selectbox(key="hist_job").options == [at.selectbox(key="hist_job").format_func(bell)]
    assert len(at.get("download_button")) == 3
    at.button(key="hist_open").click().run()
    assert not at.exception, at.exception
    assert at.session_state["job_id"] == bell and at.session_state["result"]["source"] == "kitchen.mp4"
    assert any("kitchen.mp4: 20.0 s, 1 events" in c.value for c in at.caption)
    at.text_input(key="hist_source").input("garage").run()
    assert any(m.value == "no jobs match" for m in at.markdown)


def test_analysis_options_carry_questions_watches_and_the_safety_threshold():
    from ui.backend import analysis_options

    opts = analysis_options(["when does the phone ring?", " "], ["someone falls down"], 0.85)
    assert opts.stages.safety_threshold == 0.85
    assert opts.grounding.queries == ["when does the phone ring?"] and opts.grounding.standing == ["someone falls down"]
    assert opts.grounding.checkpoint  # the shipped grounding model
    plain = analysis_options([], [], None)
    assert not plain.grounding.enabled and plain.stages.safety_threshold is None
    assert plain.stages.detector == "ssd-mobilenetv2" and analysis_options(detector="nanodet").stages.detector == "nanodet"
    with pytest.raises(BadInput, match="unknown detector 'yolo9'"):
        analysis_options(detector="yolo9")
    assert plain.stages.pose == "movenet-multipose" and analysis_options(pose="mediapipe").stages.pose == "mediapipe"
    with pytest.raises(BadInput, match="pose: unknown pose model 'openpose'; choose one of: mediapipe, movenet"):
        analysis_options(pose="openpose")


def test_boxes_are_drawn_scaled_onto_the_picture():
    import numpy as np

    from ui.picture import draw_boxes

    frame = np.zeros((180, 320, 3), np.uint8)  # half the analysed frame's size
    visual = {"frame_size": [640, 360], "detections": [{"label": "person", "score": 0.9, "box": [100, 100, 300, 340]}],
              "face_boxes": [[400, 40, 480, 120]]}
    out = np.asarray(draw_boxes(frame, visual))
    assert tuple(out[120, 50]) == (0xd6, 0x27, 0x28)  # the person's left edge, at x = 100 / 2
    assert tuple(out[40, 200]) == (0xff, 0x7f, 0x0e)  # the face's left edge, at x = 400 / 2
    assert not out[140:160, 60:140].any()  # inside the box: the picture, untouched
    assert np.array_equal(np.asarray(draw_boxes(frame, None)), frame)


def test_pose_skeletons_are_drawn_where_the_landmarks_are():
    import numpy as np

    from ui.picture import draw_boxes

    frame = np.zeros((200, 400, 3), np.uint8)
    marks = [[0.0, 0.0, 0.0, 0.0]] * 33  # MediaPipe's 33 landmarks, in 0-1 of the picture; unseen ones are skipped
    marks = [list(m) for m in marks]
    marks[11], marks[12] = [0.25, 0.5, 0, 0.9], [0.75, 0.5, 0, 0.9]  # the shoulders: a line across the middle
    marks[23] = [0.25, 0.9, 0, 0.1]  # a hip barely seen: no line to it
    out = np.asarray(draw_boxes(frame, {"frame_size": [640, 360], "pose": [{"id": 1, "landmarks": marks}]}))
    assert tuple(out[100, 200]) == (0x17, 0xbe, 0xcf)  # on the shoulder line
    assert not out[130:175, 95:105].any()  # nothing towards the unseen hip
    assert not out[:, :90].any() and not out[:, 310:].any()  # and nothing beyond the shoulders
    coco = [[0.0, 0.0, 0.0, 0.0] for _ in range(17)]  # MoveNet's 17 COCO keypoints: the shoulders are 5 and 6
    coco[5], coco[6], coco[11] = [0.25, 0.5, 0, 0.9], [0.75, 0.5, 0, 0.9], [0.25, 0.9, 0, 0.1]
    out = np.asarray(draw_boxes(frame, {"frame_size": [640, 360], "pose": [{"id": 1, "landmarks": coco}]}))
    assert tuple(out[100, 200]) == (0x17, 0xbe, 0xcf) and not out[130:175, 95:105].any()
    assert not out[:, :90].any() and not out[:, 310:].any()


def test_track_ids_zones_and_lines_are_drawn_on_the_picture():
    """A detection gets the id of the same-label track it overlaps (the tracker's box is from another frame of
    the second, a little off); zones and lines are drawn where their 0-1 coordinates say, with their names."""
    import numpy as np

    from models.zones import parse_layout
    from ui.live import line_counts
    from ui.picture import LINE_COLOR, ZONE_COLOR, draw_boxes, draw_layout, track_ids

    dets = [{"label": "car", "score": 0.8, "box": [100, 100, 200, 160]},
            {"label": "dog", "score": 0.7, "box": [300, 50, 360, 120]}]
    tracks = [{"id": 7, "label": "car", "box": [110, 104, 210, 164]}, {"id": 9, "label": "car", "box": [300, 50, 360, 120]}]
    assert track_ids(dets, tracks) == [7, None]  # the dog's place holds a car track: not the dog's
    zones, lines = parse_layout(["door=0.1,0.1 0.4,0.1 0.4,0.9 0.1,0.9"], ["gate=0.5,0,0.5,1"])
    image = draw_boxes(np.zeros((200, 400, 3), np.uint8), {"frame_size": [400, 200], "detections": dets}, tracks=tracks)
    draw_layout(image, zones, lines)
    out = np.asarray(image)
    hexrgb = lambda c: tuple(int(c[i:i + 2], 16) for i in (1, 3, 5))  # noqa: E731
    assert tuple(out[100, 40]) == hexrgb(ZONE_COLOR)  # the zone's left edge at x = 0.1 * 400
    assert tuple(out[150, 200]) == hexrgb(LINE_COLOR)  # the line down the middle
    tag = out[86:100, 100:160]  # the car's label tag reads "car #7 0.80": longer than "car 0.80"
    plain = np.asarray(draw_boxes(np.zeros((200, 400, 3), np.uint8), {"frame_size": [400, 200], "detections": dets}))
    assert (tag.any(axis=-1).sum(axis=0) > 0).sum() > (plain[86:100, 100:160].any(axis=-1).sum(axis=0) > 0).sum()
    health = {"tracking": [["crossing", "gate", "car", "left_to_right", 3], ["crossing", "gate", "person", "left_to_right", 2],
                           ["crossing", "gate", "car", "right_to_left", 1], ["zone", "door", "car", "zone_enter", 4]]}
    assert line_counts(health) == {"gate": {"left_to_right": 5, "right_to_left": 1}}


def test_a_dashboard_starting_ends_only_its_own_interrupted_streams(tmp_path):
    from ui.backend import stream_manager

    store = Store(tmp_path / "shared.db")  # one --db for `foresight serve` and the dashboard
    api = store.create_job("stream", "rtsp://cam/api")
    mine = store.create_job("dashboard-live", "rtsp://cam/dash")
    for job in (api, mine):
        store.update_job(job, status="running")
    stream_manager(store)
    assert store.job(api)["status"] == "running"  # the API server's stream goes on
    assert store.job(mine)["status"] == "failed" and "interrupted" in store.job(mine)["error"]


@pytest.mark.slow
def test_the_live_picture_is_the_frame_its_boxes_were_found_on(demo_clip, ray_runtime):
    """On the Ray spine with `keep_picture`: every picture the sink hands out is the key frame of the second
    whose detections come with it (compared with the decoded clip), and those detections are that second's."""
    import io
    import time

    import numpy as np
    from PIL import Image

    from pipelines import AnalyzeOptions, Pipeline, StageConfig
    from pipelines.media.segmenter import iter_segments

    path, _ = demo_clip
    keys = {s.index: s.frames[len(s.frames) // 2].astype(np.int16) for s in iter_segments(path) if s.frames}
    pipe = Pipeline(str(path), AnalyzeOptions(stages=StageConfig(asr=False, keep_picture=True)))
    shots = []
    try:
        while not pipe.done(0.05):
            shot = pipe.picture(timeout=30)
            if shot is not None and (not shots or shot["time"] != shots[-1]["time"]):
                shots.append(shot)
            time.sleep(0.05)
        result = pipe.wait()
        shots.append(pipe.picture(timeout=30))
    finally:
        pipe.close()
    assert len({s["time"] for s in shots}) >= 3
    by_second = {int(s["t"]): s["objects"] for s in result["seconds"]}
    for shot in shots:
        second = int(shot["time"])
        picture = np.asarray(Image.open(io.BytesIO(shot["jpeg"])).convert("RGB")).astype(np.int16)
        assert list(picture.shape[1::-1]) == shot["visual"]["frame_size"]
        distance = {k: float(np.abs(picture - frame).mean()) for k, frame in keys.items() if frame.shape == picture.shape}
        # its own second's key frame, or one just as close (the demo holds each picture for several seconds)
        assert distance[second] <= min(distance.values()) + 0.5 and distance[second] < 4.0, (second, distance)
        assert min(distance.values()) < min(d for k, d in distance.items() if (k >= 16) != (second >= 16)) - 10
        found = {}
        for d in shot["visual"]["detections"]:
            found[d["label"]] = found.get(d["label"], 0) + 1
        assert set(found) <= set(by_second[second]) | {"person"}, (second, found, by_second[second])


def test_a_file_analysis_left_by_the_page_is_not_running_for_ever(tmp_path):
    """Touching a widget or reloading the page while a file is analysed makes Streamlit raise its rerun (a
    BaseException) from the next progress call: the job stayed `running` in the store and History for ever. It is
    now failed with the reason, and the rerun goes on."""
    import numpy as np

    from training.media.synth import RATE, ClipSpec, write_clip
    from ui.backend import analyze_file

    class Rerun(BaseException):  # as streamlit's RerunException and StopException
        pass

    def touched(fraction: float) -> None:
        raise Rerun

    clip = tmp_path / "c.mp4"
    write_clip(clip, ClipSpec(3.0, 5, 64, 48, lambda t: np.full((48, 64, 3), 90, np.uint8), np.zeros(3 * RATE, np.float32)))
    store = Store(tmp_path / "f.db")
    with pytest.raises(Rerun):
        analyze_file(store, clip, progress=touched)
    (job,) = store.recent_jobs()
    assert job["status"] == "failed" and "the page was changed or reloaded" in job["error"], job
