"""A camera runs for days: the tracking stage keeps per-track state for its recent tracks only
(`TrackStage._forget`), a track lost inside a zone leaves the zone when it is forgotten, and a live source's
result keeps its recent part (`pipelines/sinks/results.py`), saying what it let go. On the real stage and sink."""

from __future__ import annotations

from pipelines.stages.record import Second
from pipelines.stages.tracking import FORGET_S
from tests.test_tracking_knobs import _boxes_stage


def _street(t: float) -> list[dict]:
    """A car across the picture every 6 s (4 s in view), and a zebra on the rice fields that the detector sees
    2 s of every 5, never moving (a new id each time, never reported)."""
    out, x = [], (t % 6) * 200
    if x < 800:
        out.append({"label": "car", "score": 0.9, "box": [x - 100, 200, x + 100, 300]})
    if t % 5 < 2:
        out.append({"label": "zebra", "score": 0.6, "box": [400, 20, 600, 150]})
    return out


def _feed(stage, boxes_at, seconds: range) -> list[Second]:
    records = []
    for s in seconds:
        frames = [{"t": s + k / 4, "size": [640, 480], "detections": boxes_at(s + k / 4)} for k in range(4)]
        records.append(stage.process(Second(index=s, start=s, end=s + 1), {"frames": frames}))
    return records


def test_per_track_state_stays_bounded_over_a_long_run():
    stage = _boxes_stage(0.1, "--line", "door=0.5,0,0.5,1", "--zone", "left=0,0 0.5,0 0.5,1 0,1")
    sizes = []
    for start in range(0, 600, 120):
        _feed(stage, _street, range(start, start + 120))
        sizes.append((len(stage._held), len(stage._seen_at), len(stage._anchor), len(stage._counter._settled),
                      len(stage._relink._last)))
    # 100 cars and 120 zebra ids over 10 minutes; what is kept covers the last minute or so, not all of them
    assert len(stage.tracks) == 100
    assert sizes[-1] == sizes[-2] and max(max(s) for s in sizes) <= 2 * (FORGET_S / 5 + 1), sizes
    assert len(stage.finish(Second.closing()).tracks) == 100  # the result still lists every track


def test_a_track_lost_inside_a_zone_leaves_it_when_forgotten():
    """A car drives into the left half and is lost there (it went behind a building): a minute later its
    zone_exit comes, at its last sighting, marked lost; a car that drives out of the zone is not marked."""
    def car(t: float) -> list[dict]:
        if t >= 3:
            return []
        x = 500 - 100 * t  # from x 500 to 200: into the left half (the zone) at 1.8 s, lost at 2.75 s
        return [{"label": "car", "score": 0.9, "box": [x - 60, 300, x + 60, 380]}]

    stage = _boxes_stage(0.0, "--zone", "left=0,0 0.5,0 0.5,1 0,1")
    events = [z for r in _feed(stage, car, range(0, 70)) for z in r.zone_events]
    assert [(z["kind"], z.get("lost", False)) for z in events] == [("zone_enter", False), ("zone_exit", True)]
    exit_ = events[-1]
    assert exit_["time"] == 2.75 and exit_["dwell_s"] == round(2.75 - events[0]["time"], 3)


def test_a_live_tracked_result_keeps_its_newest_tracks_and_counts_the_rest():
    from dataclasses import replace

    from app.summary import unique_objects
    from pipelines.spine import graph
    from pipelines.stages.config import LIVE_TRACKS
    from tests.test_tracking import _options

    options = _options("--line", "door=0.5,0,0.5,1")
    node = next(n for n in graph.GRAPH if n.name == "tracking")
    assert graph.node_config(node, options, live=True).track_keep == LIVE_TRACKS
    assert graph.node_config(node, options).track_keep is None  # a file's result lists every track
    stage = _boxes_stage(0.1, "--line", "door=0.5,0,0.5,1")
    stage.reconfigure(replace(stage.config, track_keep=20))
    _feed(stage, _street, range(600))
    final = stage.finish(Second.closing())
    assert 20 <= len(final.tracks) <= 22 and final.tracks_dropped == {"car": 100 - len(final.tracks)}
    assert [t["start"] for t in final.tracks] == sorted(t["start"] for t in final.tracks)[-len(final.tracks):]
    assert final.tracks[-1]["end"] > 590  # the newest are kept
    result = {"tracks": final.tracks, "dropped": {"tracks": final.tracks_dropped}}
    assert unique_objects(result) == {"car": 100}  # the summary still counts every car


def test_a_live_result_keeps_its_last_hour_and_says_what_it_let_go():
    from pipelines.sinks.results import LIVE_SECONDS
    from pipelines.sinks.sink import Sink

    def run(live: bool) -> dict:
        sink = Sink("cam", live=live)
        for s in range(LIVE_SECONDS + 400):
            record = Second(index=s, start=s, end=s + 1)
            record.alerts = [{"time": s, "severity": "info", "rule": "r", "reason": "x"}] if s % 2 == 0 else []
            sink.write(record)
        return sink.result(None, True, True, 1.0, None)

    live, whole = run(True), run(False)
    assert len(live["seconds"]) == LIVE_SECONDS and live["seconds"][0]["t"] == 400
    assert live["dropped"] == {"seconds": 400} and live["duration_s"] == LIVE_SECONDS + 400
    assert len(live["alerts"]) == (LIVE_SECONDS + 400) // 2  # under the lists' bound: all kept
    assert len(whole["seconds"]) == LIVE_SECONDS + 400 and "dropped" not in whole  # a file's result is whole



def test_a_long_streams_end_keeps_every_row_its_sink_wrote(tmp_path, monkeypatch):
    """A live stream's sink writes each row as it closes; its end saves a result that holds only the newest
    items (here 3) and no crossing rows. The store keeps every row (real SQLite); a file job's rows are still
    its result's, replaced whole."""
    from pipelines.sinks import results
    from pipelines.sinks.sink import Sink
    from pipelines.sinks.store import Store

    monkeypatch.setattr(results, "LIVE_ITEMS", 3)
    store = Store(tmp_path / "f.db")
    job = store.create_job("stream", "cam")
    sink = Sink("cam", job_id=job, store=store, live=True)
    for s in range(8):
        record = Second(index=s, start=s, end=s + 1)
        record.events_closed = [{"label": "Dog", "modality": "audio", "start": s, "end": s + 1, "confidence": 0.9}]
        record.transcript = [{"start": s, "end": s + 1, "text": f"line {s}"}]
        record.moments = [{"query": "a dog", "start": s, "end": s + 1, "score": 0.5}]
        record.crossings = [{"time": s + 0.5, "line": "gate", "label": "car", "track_id": s,
                             "direction": "left_to_right"}]
        sink.write(record)
    result = sink.result(None, True, True, 1.0, None)
    assert result["dropped"] == {"events": 5, "transcript": 5, "moments": 5, "crossings": 5}
    store.save_result(job, result, status="stopped", rows_written=True)  # what a server stream's end does
    counts = {t: len(store.rows(t, job)) for t in ("events", "transcript", "moments", "alerts")}
    assert counts == {"events": 8, "transcript": 8, "moments": 8, "alerts": 8}, counts
    assert [r["text"] for r in store.rows("transcript", job)] == [f"line {s}" for s in range(8)]
    assert store.job(job)["status"] == "stopped" and len(store.result(job)["events"]) == 3

    upload = store.create_job("upload", "clip.mp4")
    store.append_rows(upload, "clip.mp4", [], [{"start": 0, "end": 1, "text": "a draft"}])
    store.save_result(upload, {**result, "source": "clip.mp4"})  # a file job: the result's rows, whole
    assert [r["text"] for r in store.rows("transcript", upload)] == ["line 5", "line 6", "line 7"]
    assert [r["rule"] for r in store.rows("alerts", upload)] == []

def test_standing_queries_keep_a_window_and_fire_as_over_everything(demo_clip, monkeypatch):
    """A live stream's grounding stage (standing queries only) keeps the last lookback + check seconds, not every
    second's features (about 3.5 kB a second, all stacked again at every check): on the demo with a 10-s
    lookback it keeps 15 of 20 seconds and fires the same moments, at the same stream times, as when it keeps
    everything. One-off queries and the search index still keep everything."""
    from pipelines import AnalyzeOptions, GroundingConfig, StageConfig, analyze_inline
    from pipelines.stages.grounding import GroundingStage

    standing = ["a telephone is ringing", "someone is speaking"]
    options = AnalyzeOptions(stages=StageConfig(safety=False), grounding=GroundingConfig(
        standing=standing, lookback_s=10, check_every_s=5, fire_threshold=0.0))
    kept = []
    real = GroundingStage._trim

    def spy(self):
        real(self)
        kept.append((self.keep_s, len(self.audio), self.base))

    monkeypatch.setattr(GroundingStage, "_trim", spy)
    windowed = [m for m in analyze_inline(str(demo_clip[0]), options)["moments"] if m.get("standing")]
    assert kept[-1] == (15, 15, 5) and max(n for _, n, _ in kept) == 15
    monkeypatch.setattr(GroundingStage, "keep_s", property(lambda self: None))
    kept.clear()
    whole = [m for m in analyze_inline(str(demo_clip[0]), options)["moments"] if m.get("standing")]
    assert kept[-1] == (None, 20, 0)
    assert windowed and windowed == whole
    assert GroundingStage(GroundingConfig(queries=["x"], standing=standing)).keep_s is None


def test_a_long_outage_does_not_fill_a_day_of_empty_seconds():
    """A camera away for a day comes back at stream second 86,400: the grounding stage of a stream with standing
    queries keeps its window, filled with unavailable seconds, instead of pushing a day of them first."""
    import numpy as np

    from pipelines.stages.config import GroundingConfig
    from pipelines.stages.grounding import GroundingStage

    stage = GroundingStage(GroundingConfig(standing=["a dog barks"], check_every_s=1000))
    dims = stage.grounder.dims

    def second(t: int) -> None:
        record = Second(index=t, start=t, end=t + 1)
        stage.process(record, {"available": True, "vector": np.ones(dims["audio"], np.float32)},
                      {"available": True, "vector": np.ones(dims["visual"], np.float32)})

    for t in range(3):
        second(t)
    pushed, push = [], stage._push
    stage._push = lambda *vectors: (pushed.append(1), push(*vectors))
    second(86_400)
    assert len(pushed) == stage.keep_s + 1  # the window and this second, not 86,398 empty seconds first
    assert stage.base + len(stage.audio) == 86_401 and len(stage.audio) == stage.keep_s
    assert stage.audio_mask[-1] and not any(stage.audio_mask[:-1])  # the outage: unavailable, not silent
