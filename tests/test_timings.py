"""`timings.stages` says where the time of an analysis goes: decode and segmenter, every stage of the graph
(with their parts in `timings.stages_detail`), Ray submit and wait, the sink."""

from __future__ import annotations

import pytest

from training.media.synth import flash_tone_clip

EXPECTED = {"decode_s", "segment_s", "speech_s", "audio_s", "transcribe_s", "visual_s", "parser_s", "safety_s", "sink_s"}


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    return flash_tone_clip(tmp_path_factory.mktemp("timings") / "flash.mp4", duration_s=6.0, event_s=(2.0, 4.0))


def check(result: dict) -> dict:
    timings = result["timings"]
    stages, wall = timings["stages"], timings["wall_s"]
    assert EXPECTED <= set(stages), stages
    assert all(isinstance(v, float) and v >= 0 for v in stages.values()), stages
    assert all(v <= wall + 0.05 for v in stages.values()), (stages, wall)  # nothing outlasts the analysis
    assert stages["decode_s"] > 0 and stages["speech_s"] > 0 and stages["visual_s"] > 0
    detail = timings["stages_detail"]
    assert set(detail["speech"]) == {"vad_s"} and set(detail["transcribe"]) == {"asr_s"}
    assert {"tags_s", "mel_s"} <= set(detail["audio"])
    assert {"detector_s", "pose_s", "faces_s", "frames_s"} <= set(detail["visual"])
    for name, parts in detail.items():  # parts are inside their stage's total (pose runs beside the others)
        parts = {k: v for k, v in parts.items() if k.endswith("_s")}  # seconds; counts (ocr_reads) beside them
        serial = {k: v for k, v in parts.items() if k != "pose_s"}
        assert all(0 <= v <= stages[f"{name}_s"] + 0.01 for v in parts.values()), (name, parts)
        assert sum(serial.values()) <= stages[f"{name}_s"] + 0.01, (name, parts)
    return stages


def test_inline_result_says_where_the_time_goes(clip):
    from pipelines import analyze_inline

    stages = check(analyze_inline(str(clip)))
    assert "ray_submit_s" not in stages


def test_actor_result_says_where_the_time_goes(clip, ray_runtime):
    from pipelines import analyze

    result = analyze(str(clip))
    stages = check(result)
    assert {"ray_submit_s", "ray_wait_s"} <= set(stages)
    assert result["timings"]["node_id"]


def test_runs_without_a_picture_stage_decode_no_video(clip, ray_runtime):
    """--no-visual on both runners: the reader leaves video undecoded, and the audio node runs no VAD of its own
    (it takes the speech node's); both runners still give the same result."""
    import json

    from pipelines import AnalyzeOptions, StageConfig, analyze, analyze_inline

    options = AnalyzeOptions(stages=StageConfig(visual=False, asr=False, safety=False))
    results = analyze(str(clip), options), analyze_inline(str(clip), options)
    for result in results:
        ingest = result["ingest"]
        assert ingest["segments_emitted"] == 6 and ingest["frames_decoded"] == 0 and ingest["frames_skipped"] == 180
        assert "vad_s" in result["timings"]["stages_detail"]["speech"]
        assert "vad_s" not in result["timings"]["stages_detail"]["audio"]
    same = [{k: v for k, v in r.items() if k != "timings"} for r in results]
    assert json.dumps(same[0], sort_keys=True) == json.dumps(same[1], sort_keys=True)


def test_summary_names_the_largest_costs():
    from app.summary import render_summary

    text = render_summary({"source": "x.mp4", "duration_s": 6.0, "timings": {
        "wall_s": 3.0, "realtime_factor": 2.0, "stages": {"decode_s": 0.4, "visual_s": 1.5, "sink_s": 0.001}}})
    assert "time in: visual 1.5 s, decode 0.4 s" in text and "sink" not in text
