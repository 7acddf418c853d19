"""Tracking, zones and lines on a real decoded clip: skimage's cameraman photo cut out and moved over the rocket
photo, encoded to H.264 and analysed by the inline runner (the real detector, tracker and geometry)."""

from __future__ import annotations

import argparse

import av
import numpy as np
import pytest
from PIL import Image

from app.services.settings import add_analysis_flags, analysis_options
from app.summary import render_summary, unique_objects
from models.errors import BadInput
from models.zones import parse_layout

W, H, FPS = 640, 360, 10


def _scene(path, stops_s: float = 2.5, back: bool = True) -> None:
    """A person walks left to right (x 0.1 -> 0.8 of the picture), stands `stops_s` in the right part, and
    (`back`) walks back out of it to the middle left."""
    from skimage import data

    bg = np.asarray(Image.fromarray(data.rocket()).resize((W, H)))
    person = Image.fromarray(np.stack([data.camera()] * 3, -1)[0:512, 100:400])
    person = person.resize((int(person.size[0] * 220 / person.size[1]), 220))
    pw = person.size[0]
    centres = list(np.linspace(0.1, 0.8, int(3.5 * FPS)))  # walk right
    centres += [0.8] * int(stops_s * FPS)  # stand
    centres += list(np.linspace(0.8, 0.3, int(2.0 * FPS))) if back else []  # walk back
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=FPS)
        stream.width, stream.height, stream.pix_fmt = W, H, "yuv420p"
        for c in centres:
            frame = Image.fromarray(bg.copy())
            frame.paste(person, (int(c * W - pw / 2), H - 220))
            out.mux(stream.encode(av.VideoFrame.from_ndarray(np.asarray(frame), format="rgb24")))
        out.mux(stream.encode())


def _options(*argv: str):
    p = argparse.ArgumentParser()
    add_analysis_flags(p)
    return analysis_options(p.parse_args(["--no-asr", "--no-tags", "--no-safety", *argv]))


LAYOUT = ("--line", "door=0.5,0,0.5,1", "--zone", "right=0.62,0 1,0 1,1 0.62,1", "--loiter-s", "1.5")


@pytest.fixture(scope="module")
def tracked(tmp_path_factory):
    from pipelines import analyze_inline

    path = tmp_path_factory.mktemp("scene") / "walk.mp4"
    _scene(path)
    return analyze_inline(str(path), _options(*LAYOUT))


def test_one_walker_is_one_track(tracked):
    people = [t for t in tracked["tracks"] if t["label"] == "person"]
    assert len(people) == 1, tracked["tracks"]
    track = people[0]
    assert track["start"] < 1.0 and track["end"] > 6.0
    times = [p[0] for p in track["path"]]
    assert all(int(b / 0.25) > int(a / 0.25) for a, b in zip(times, times[1:], strict=False))  # <= 4 a second
    assert len(times) >= 3 * 6  # and the tracker got about 4 a second
    assert track["start"] <= track["best_time"] <= track["end"]
    assert unique_objects(tracked) == {"person": 1}
    assert "Objects tracked (1): 1 person" in render_summary(tracked)
    seen = [s for s in tracked["seconds"] if s.get("track_ids")]
    assert seen and all(s["track_ids"]["person"] == [track["id"]] for s in seen)
    assert all("objects" in s for s in tracked["seconds"])  # the per-frame counts stay for readers


def test_line_crossings_have_the_right_direction(tracked):
    # The line is drawn top to bottom: looking along it, screen-left is its right side.
    crossings = [(c["line"], c["direction"], c["label"]) for c in tracked["crossings"]]
    assert crossings == [("door", "right_to_left", "person"), ("door", "left_to_right", "person")]
    first, back = tracked["crossings"]
    assert 1.0 < first["time"] < 3.0 and back["time"] > 6.0


def test_zone_enter_loiter_exit(tracked):
    kinds = [(z["kind"], z["zone"]) for z in tracked["zone_events"]]
    assert kinds == [("zone_enter", "right"), ("loiter", "right"), ("zone_exit", "right")]
    enter, loiter, leave = tracked["zone_events"]
    assert loiter["time"] - enter["time"] >= 1.5 and leave["dwell_s"] >= 2.0


@pytest.mark.parametrize("argv, reason", [
    (["--zone", "z=0.1,0.1 0.5,0.5"], "at least 3 points"),
    (["--zone", "z=0.1,0.1 0.5,1.5 0.9,0.1"], "normalised to 0-1"),
    (["--line", "a=0,0,1,1", "--zone", "a=0,0 1,0 1,1"], "used twice"),
    (["--line", "a=0,0,1"], "NAME=x1,y1,x2,y2"),
    (["--line", "0,0,1,1"], "NAME=coordinates"),
    (["--zone", "z=0,0 x,1 1,1"], "not a number"),
    (["--zone", "z=0,0 0.5,0.5 1,1"], "no area"),
    (["--track-fps", "0"], "--track-fps"),
    (["--track", "--no-visual"], "need the picture"),
])
def test_bad_layouts_are_refused_with_the_reason(argv, reason):
    with pytest.raises(BadInput, match=reason):
        _options(*argv)


def test_bad_zone_on_the_cli_exits_2_before_models_load(capsys, tmp_path):
    from app.cli import main

    clip = tmp_path / "x.mp4"
    _scene(clip, stops_s=0.1)
    assert main(["analyze", str(clip), "--zone", "z=0,0 1,1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "at least 3 points" in err[0]


def test_a_zone_on_an_audio_only_file_exits_2(capsys, tmp_path):
    import soundfile

    from app.cli import main

    wav = tmp_path / "talk.wav"
    soundfile.write(wav, np.zeros(3 * 16000, np.float32), 16000)
    assert main(["analyze", str(wav), "--line", "door=0.5,0,0.5,1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "has no picture, and tracking, zones and lines need one" in err[0]


def test_tracking_raises_the_sampling_rate():
    opts = _options("--track")
    assert opts.stages.track and opts.sample_fps >= 4
    assert parse_layout(None, None) == ((), ())


def test_two_streams_on_the_ray_hosts_keep_their_own_tracks(tmp_path, ray_runtime):
    """Both streams at once on the shared stage hosts: each has its own one track, crossings and zone
    events (one walks back out, the other stays), and closing them frees the tracker state on the host."""
    import ray

    from pipelines import Pipeline

    there_and_back, stays = tmp_path / "back.mp4", tmp_path / "stays.mp4"
    _scene(there_and_back)
    _scene(stays, back=False)
    options = _options(*LAYOUT)
    pipes = [Pipeline(str(p), options) for p in (there_and_back, stays)]
    try:
        back, stay = (p.wait() for p in pipes)
        counts = pipes[1].progress(timeout=30)["stats"]["tracking"]  # what /metrics reads for this stream
    finally:
        host = pipes[0].actors["tracking"]
        for p in pipes:
            p.close()
    assert [len(r["tracks"]) for r in (back, stay)] == [1, 1]
    assert [c["direction"] for c in back["crossings"]] == ["right_to_left", "left_to_right"]
    assert [c["direction"] for c in stay["crossings"]] == ["right_to_left"]
    assert [z["kind"] for z in stay["zone_events"]] == ["zone_enter", "loiter"]
    assert [z["kind"] for z in back["zone_events"]] == ["zone_enter", "loiter", "zone_exit"]
    assert ray.get([host.close.remote(p.stream) for p in pipes]) == [False, False]  # already freed
    assert sorted(map(tuple, counts)) == [("crossing", "door", "person", "right_to_left", 1),
                                          ("zone", "right", "person", "loiter", 1),
                                          ("zone", "right", "person", "zone_enter", 1)]


def test_stream_zones_are_checked_by_the_api(tmp_path):
    """POST /v1/streams with a bad zone or line: 422 with a one-line reason, before any source is opened."""
    from tests.helpers.api_server import ApiServer
    from tests.helpers.cli import free_port

    server = ApiServer(tmp_path / "f.db", free_port(), "--source-host", "localhost", api_key="k")
    try:
        server.wait_ready()
        with server.client() as c:
            for body, reason in (({"zones": ["door=0,0 1,1"]}, "at least 3 points"),
                                 ({"lines": ["a=0,0,2,1"]}, "normalised to 0-1"),
                                 ({"zones": ["a=0,0 1,0 1,1"], "lines": ["a=0,0,1,1"]}, "used twice"),
                                 ({"zones": ["t0ken=0,0 0.5,1.5 0.9,0.1"]}, "zones[0]: coordinates are normalised")):
                r = c.post("/v1/streams", json={"source": "rtsp://localhost:9/x", **body})
                assert r.status_code == 422, r.text
                assert reason in r.json()["detail"] and "\n" not in r.json()["detail"]
                assert not any(part in r.json()["detail"] for part in ("t0ken", "1.5", "a=")), r.json()  # no echo
    finally:
        server.stop()


def test_zones_and_lines_from_toml(tmp_path):
    from app.cli import build_parser
    from app.services.settings import parse_args

    config = tmp_path / "f.toml"
    config.write_text('[analysis]\nzone = ["door=0,0 0.5,0 0.5,1"]\nline = ["gate=0.5,0,0.5,1"]\nloiter-s = 4.0\n')
    parser = build_parser()
    args = parse_args(parser, ["analyze", "x.mp4", "--config", str(config)], parser.config_targets)
    opts = analysis_options(args)
    assert [z.name for z in opts.stages.zones] == ["door"] and [x.name for x in opts.stages.lines] == ["gate"]
    assert opts.stages.loiter_s == 4.0 and opts.stages.track


def test_crossings_and_zone_events_reach_the_store_and_the_feed(tracked, tmp_path):
    """The sink writes a second's crossings and zone events into the job's rows (real SQLite) and its feed."""
    from pipelines.sinks.sink import Sink
    from pipelines.sinks.store import Store
    from pipelines.stages.record import Second

    db = tmp_path / "f.db"
    job = Store(db).create_job("stream", "walk.mp4")
    sink = Sink("walk.mp4", job_id=job, db_path=str(db), feed_size=8)
    record = Second(index=3, start=3.0, end=4.0, crossings=tracked["crossings"][:1],
                    zone_events=tracked["zone_events"][:1])
    sink.write(record)
    rows = Store(db).rows("alerts", job)
    assert [(r["rule"], r["severity"]) for r in rows] == [("line_crossing", "info"), ("zone_enter", "info")]
    assert "crossed door right to left" in rows[0]["reason"]
    assert sink.tracking_counts == {("crossing", "door", "person", "right_to_left"): 1,
                                    ("zone", "right", "person", "zone_enter"): 1}  # what /metrics counts
    (_, item), = sink.feed_since(0)
    assert item["crossings"] == tracked["crossings"][:1] and item["zone_events"] == tracked["zone_events"][:1]


@pytest.mark.slow
def test_zones_change_on_a_running_stream(tmp_path, rtsp_server, demo_clip):
    """PUT /v1/streams/{id}/zones on a live RTSP loop: a zone added while it runs gets zone events from then on;
    a bad zone is 422, a stream without tracking 409, an unknown stream 404. A tracked stream whose source turns
    out to have no picture (audio only) is ended with that reason, as the CLI refuses such a file."""
    import json
    import subprocess
    import time

    from pipelines.sinks.store import Store
    from tests.helpers.api_server import ApiServer
    from tests.helpers.cli import free_port
    from training.media.loopback import RtspServer

    audio = tmp_path / "audio.mp4"
    subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-i", str(demo_clip[0]), "-vn", "-c:a", "copy",
                    str(audio)], check=True)
    radio = RtspServer(audio)
    radio.start()
    server = ApiServer(tmp_path / "f.db", free_port(), "--source-network", "127.0.0.0/8")
    everything = "all=0,0 1,0 1,1 0,1"
    try:
        server.wait_ready()
        with server.client() as c:
            blind = c.post("/v1/streams", json={"source": radio.url, "rtsp_transport": "udp", "zones": [everything]})
            assert blind.status_code == 202, blind.text
            tracked = c.post("/v1/streams", json={"source": rtsp_server.url, "rtsp_transport": "udp",
                                                  "track": True}).json()
            plain = c.post("/v1/streams", json={"source": rtsp_server.url, "rtsp_transport": "udp"}).json()
            assert tracked["track"] and not plain["track"]
            for sid in (tracked["id"], plain["id"]):
                deadline = time.time() + 300
                while c.get(f"/v1/streams/{sid}").json()["status"] != "running":
                    assert time.time() < deadline, server.tail()
                    time.sleep(0.5)
            r = c.put(f"/v1/streams/{tracked['id']}/zones", json={"zones": ["door=0,0 1,1"]})
            assert r.status_code == 422 and "at least 3 points" in r.text
            r = c.put(f"/v1/streams/{plain['id']}/zones", json={"zones": [everything]})
            assert r.status_code == 409 and "without tracking" in r.json()["detail"]
            assert c.put("/v1/streams/nope/zones", json={"zones": [everything]}).status_code == 404
            r = c.put(f"/v1/streams/{tracked['id']}/zones", json={"zones": [everything], "lines": ["mid=0.5,0,0.5,1"]})
            assert r.status_code == 200, r.text
            assert (r.json()["zones"], r.json()["lines"]) == ([everything], ["mid=0.5,0,0.5,1"])
            time.sleep(25)  # more than one loop of the 20-s demo: the person, the motorbike, the cup, the cat
            job = c.delete(f"/v1/streams/{tracked['id']}").json()["job_id"]
            c.delete(f"/v1/streams/{plain['id']}")
            deadline = time.time() + 240  # DELETE waits 30 s; a loaded machine may take longer to save the result
            while c.get(f"/v1/jobs/{job}").json()["status"] not in ("stopped", "done", "failed"):
                assert time.time() < deadline, server.tail()
                time.sleep(0.5)
            r = c.get(f"/v1/jobs/{job}/result")
            assert r.status_code == 200, r.text
            result = r.json()
            info = c.get(f"/v1/streams/{blind.json()['id']}").json()
            deadline = time.time() + 120
            while info["status"] not in ("failed", "ended", "stopped"):
                assert time.time() < deadline, (info, server.tail())
                time.sleep(0.5)
                info = c.get(f"/v1/streams/{blind.json()['id']}").json()
            assert info["status"] == "failed" and "has no picture, and tracking, zones and lines need one" in (
                info.get("error") or ""), info
        assert {z["zone"] for z in result["zone_events"]} == {"all"}
        assert "zone_enter" in {z["kind"] for z in result["zone_events"]}
        rows = Store(tmp_path / "f.db").rows("alerts", job)  # the sink's rows outlive the stream's end
        assert {(r["rule"], json.loads(r["evidence_json"])[0]["zone"]) for r in rows if r["rule"] == "zone_enter"} \
            == {("zone_enter", "all")}, rows
    finally:
        server.stop()
        radio.kill()


def test_a_person_lying_still_is_a_safety_cue():
    """The tracker's stillness cue reaches the safety rules: a person box wider than tall that stays put for
    10 s raises one warning for that track; a person standing still raises none; moving re-arms it."""
    from models.safety.fast_rules import FastRules
    from pipelines.stages.config import StageConfig
    from pipelines.stages.record import Second
    from pipelines.stages.safety import SafetyStage
    from pipelines.stages.tracking import TrackStage

    stage, signals, rules = TrackStage(StageConfig(track=True, track_fps=4.0)), SafetyStage(StageConfig(safety=False)), FastRules()
    alerts, seen = [], []
    for sec in range(26):
        x = 200 + (3 if sec % 2 else 0) + (150 if sec >= 14 else 0)  # a small sway; then moved at 14 s
        frames = [{"t": sec + k / 4, "size": [640, 360], "detections": [
            {"label": "person", "score": 0.9, "box": [x, 250, x + 220, 330]},  # lying: 220 x 80 px
            {"label": "person", "score": 0.9, "box": [520, 60, 580, 300]}]}  # standing still
            for k in range(4)]
        record = stage.process(Second(index=sec, start=float(sec), end=sec + 1.0), {"frames": frames})
        seen.append({t["id"]: (t["still_s"], t["lying"]) for t in record.tracked})
        alerts += [(sec, a) for a in rules.update(signals.signals(record))]
    lying_id = next(tid for tid, (_, lying) in seen[5].items() if lying)
    assert [sec for sec, _ in alerts] == [10, 24], alerts  # 10 s still; moved at 14 s, still again for 10 s
    assert all(a.rule == "A person lying still must be checked on" and f"#{lying_id}" in a.reason for _, a in alerts)
    assert seen[14][lying_id][0] < 1.0 and seen[19][lying_id][0] >= 4.5  # moved: still again from 14 s


def test_zone_watch_parsing():
    from models.encoders.detector import coco_labels
    from models.zone_watch import zone_watch

    labels, zones = tuple(coco_labels()), ("door", "back_door", "lot")
    assert zone_watch("a person stays in the doorway", zones, labels) is None  # "doorway" is not "door"
    w = zone_watch("someone waits at the back door", zones, labels)
    assert (w.zone, w.kind, w.labels) == ("back_door", "loiter", ("person",))
    w = zone_watch("a car leaves the lot", zones, labels)
    assert (w.zone, w.kind, w.labels) == ("lot", "zone_exit", ("car",))
    assert zone_watch("anything enters the lot", zones, labels).labels is None
    assert zone_watch("a phone rings", zones, labels) is None


def test_a_watch_that_names_a_zone_fires_on_its_zone_events(tmp_path):
    """`--watch "a person stays in right"` fires once, from the tracker's loiter event (not the grounder);
    a watch for a car entering it does not fire."""
    from dataclasses import replace

    from pipelines import analyze_inline

    path = tmp_path / "walk.mp4"
    _scene(path, back=False)
    options = _options(*LAYOUT)
    options.grounding = replace(options.grounding, standing=["a person stays in right", "a car enters right"])
    result = analyze_inline(str(path), options)
    loiter = next(z for z in result["zone_events"] if z["kind"] == "loiter")
    fired = [m for m in result["moments"] if m.get("standing")]
    assert [(m["query"], m["method"], m["zone"], m["track_id"]) for m in fired] == [
        ("a person stays in right", "zone", "right", loiter["track_id"])]
    assert fired[0]["end"] == loiter["time"] and fired[0]["start"] < fired[0]["end"]
