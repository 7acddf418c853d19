"""End to end on the Ray actor spine with the real models: speech, transcript, sound events, the CLI."""

from __future__ import annotations

import json
import re

from models.trisense.metrics import temporal_iou as iou
from tests.helpers.cli import run_cli
from training.media.synth import DEMO_TEXT


def words(text: str) -> list[str]:
    return re.findall(r"[a-z']+", text.lower())


def wer(ref: list[str], hyp: list[str]) -> float:
    d = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, d[0] = d[0], i
        for j, h in enumerate(hyp, 1):
            prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (r != h))
    return d[-1] / len(ref)


def test_cli_analyze_demo_clip_end_to_end(tmp_path, demo_clip):
    path, truth = demo_clip
    out = tmp_path / "result.json"
    proc = run_cli("analyze", str(path), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "Transcript" in proc.stdout and "Events" in proc.stdout
    result = json.loads(out.read_text())
    assert result["schema_version"] == 1 and result["source"] == path.name
    assert result["has_audio"] is True and abs(result["duration_s"] - truth.duration_s) < 0.5
    for key in ("events", "transcript", "moments", "alerts", "timings"):
        assert key in result

    hyp = words(" ".join(t["text"] for t in result["transcript"]))
    assert wer(words(DEMO_TEXT), hyp) < 0.2, hyp
    first, last = result["transcript"][0], result["transcript"][-1]
    assert abs(first["start"] - truth.speech[0]) < 0.6 and abs(last["end"] - truth.speech[1]) < 0.8
    assert all(w["start"] <= w["end"] for t in result["transcript"] for w in t.get("words", []))

    # One utterance is one audio Speech event: the VAD's span (not PreFM's pieces that took turns with the
    # audio-visual lane). The audio-visual Speech event lies inside it, on seconds that show a person.
    speech = [e for e in result["events"] if e["label"] == "Speech"]
    heard = [e for e in speech if e["modality"] == "audio"]
    assert len(heard) == 1 and iou((heard[0]["start"], heard[0]["end"]), truth.speech) > 0.8, speech
    assert heard[0]["source"] == "tags" and heard[0]["taxonomy"] == "llp"
    seen = [e for e in speech if e["modality"] == "audio-visual"]
    assert len(seen) <= 1 and {e["modality"] for e in speech} <= {"audio", "audio-visual"}, speech
    people = {int(r["t"]) for r in result["seconds"] if r["persons"] > 0}
    for e in seen:
        assert heard[0]["start"] - 1 <= e["start"] < e["end"] <= heard[0]["end"] + 1
        assert int(e["start"]) in people and int(e["end"]) - 1 in people
    # A posture is reported only for a person, and the count agrees with the detector's objects.
    assert all(r["persons"] > 0 or not r["postures"] for r in result["seconds"])
    assert all(r["persons"] == r["objects"].get("person", 0) for r in result["seconds"])
    assert all(e["modality"] in ("audio", "visual", "audio-visual") for e in result["events"])
    phone = [e for e in result["events"] if e["label"] == "Telephone_bell_ringing"]
    assert any(e["start"] < truth.phone[1] and e["end"] > truth.phone[0] for e in phone), result["events"]
    # Per-second records say what was seen: the first pictures (astronaut, camera man) show people.
    seconds = result["seconds"]
    assert len(seconds) == round(truth.duration_s) and seconds[0]["persons"] >= 1
    assert all("audio_tags" in r and "objects" in r and "camera_trouble" in r for r in seconds)


def test_tag_events_without_prefm(demo_clip):
    from pipelines import AnalyzeOptions, StageConfig, analyze_inline

    path, truth = demo_clip
    result = analyze_inline(str(path), AnalyzeOptions(stages=StageConfig(events_model="tags", asr=False, safety=False)))
    labels = {(e["label"], e["modality"]) for e in result["events"]}
    assert ("Speech", "audio") in labels and ("Person", "visual") in labels
    assert any(re.search(r"Telephone|Ringtone|Alarm|Bell|Beep|Buzzer", e["label"]) and e["start"] < truth.alarm[1]
               and e["end"] > truth.phone[0] for e in result["events"])


def test_queries_and_standing_queries_fill_moments(demo_clip):
    from pipelines import AnalyzeOptions, GroundingConfig, StageConfig, analyze_inline

    path, truth = demo_clip
    options = AnalyzeOptions(stages=StageConfig(safety=False), grounding=GroundingConfig(
        queries=["a telephone is ringing", "someone talks about the front door"],
        standing=["a telephone is ringing", "a telephone is ringing @0.999"]))
    result = analyze_inline(str(path), options)
    by_query: dict[str, list] = {}
    for m in result["moments"]:
        by_query.setdefault(m["query"], []).append(m)
        assert abs(sum(m["modality_weights"].values()) - 1.0) < 1e-3 and m["start"] < m["end"]
    one_off = [m for m in by_query["a telephone is ringing"] if not m.get("standing")]
    assert one_off and iou((one_off[0]["start"], one_off[0]["end"]), truth.phone) > 0.15, one_off
    door = by_query["someone talks about the front door"][0]
    assert door["start"] < truth.speech[1] and door["end"] > truth.speech[0]
    assert door["modality_weights"]["speech"] > one_off[0]["modality_weights"]["speech"]
    fired = [m for m in by_query["a telephone is ringing"] if m.get("standing")]
    assert fired and fired[0]["fired_at"] >= fired[0]["end"] - 1e-6  # fired live, after the moment, not before
    # A sound watch fires on what was heard, not on "the phone is ringing" said aloud at 3 s (at the calibrated
    # threshold it fired there, speech 0.66 of the weight, before sound watches needed audio evidence)
    assert fired[0]["start"] < truth.phone[1] and fired[0]["end"] > truth.phone[0], fired
    assert all(max(m["modality_weights"], key=m["modality_weights"].get) == "audio" for m in fired), fired
    assert {m["watch"] for m in fired} == {"a telephone is ringing"}  # the @0.999 one, held to its own, never fires
    assert fired[0]["threshold"] < 0.999


def test_clip_features_are_indexed_for_search_over_everything_stored(demo_clip, tmp_path):
    from pipelines import AnalyzeOptions, GroundingConfig, StageConfig, analyze_inline
    from pipelines.sinks.grounding_index import GroundingIndex
    from pipelines.stages.grounding import load_grounder

    path, truth = demo_clip
    db = tmp_path / "store.db"
    analyze_inline(str(path), AnalyzeOptions(stages=StageConfig(safety=False, asr=False), grounding=GroundingConfig(
        index_db=str(db), index_source="demo")))
    index = GroundingIndex(db, load_grounder())
    assert index.source_ids() == ["demo"]
    hits = index.search("a telephone is ringing", top_k=3)
    assert hits and hits[0].to_dict()["source_id"] == "demo"
    best = hits[0].to_dict()
    assert best["start"] < truth.phone[1] + 2 and best["end"] > truth.phone[0] - 2, best


def test_ray_and_inline_runners_give_identical_results(tmp_path, ray_runtime, monkeypatch):
    """One stage graph, two runners: the Ray actors and the inline runner return the same result, byte for byte
    (timings aside), with every node of the graph present (grounding included). On Ray both ways of calling one
    host: the whole second in one call (`StageHost.second`) and one call per node."""
    from pipelines import AnalyzeOptions, GroundingConfig, analyze, analyze_inline
    from pipelines.spine import graph, hosts
    from training.media.synth import flash_tone_clip

    clip = flash_tone_clip(tmp_path / "flash.mp4", duration_s=6.0, event_s=(2.0, 4.0))
    # A standing query held to a low threshold of its own fires once, near it (score 0.216 at 0.2): the firing
    # must not depend on the runner. (Issue 19 left standing queries out of this test after a missed firing on
    # Ray in about one run of six; in session 35, 32 runs of benchmarks/runner_agreement.py, on both Ray paths
    # and beside busy processes, found none.)
    options = AnalyzeOptions(grounding=GroundingConfig(queries=["a short beep"],
                                                       standing=["a flash of light @0.2", "a beep"]))
    options.stages.track = True  # and the tracking node too
    options.stages.ocr = True  # and text on screen
    assert [n.name for n in graph.nodes(options)] == [n.name for n in graph.GRAPH]
    monkeypatch.setenv(hosts.HOSTS_ENV, "one")
    on_ray, inline = analyze(str(clip), options), analyze_inline(str(clip), options)
    monkeypatch.setenv(hosts.NODE_CALLS_ENV, "1")
    per_node = analyze(str(clip), options)
    # The default grounder may answer "not found" (a flash and a tone are not "a short beep" to its taggers); its
    # answer entry, best score included, is there either way and must match across the runners.
    assert on_ray["seconds"] and on_ray["ingest"]["segments_emitted"] == 6
    assert [a["query"] for a in on_ray["answers"]] == ["a short beep"] and on_ray["answers"][0]["best_score"] > 0
    assert [m["watch"] for m in on_ray["moments"] if m.get("standing")] == ["a flash of light @0.2"]
    same = [json.dumps({k: v for k, v in r.items() if k != "timings"}, sort_keys=True)
            for r in (on_ray, inline, per_node)]
    assert same[0] == same[1] and same[2] == same[1]
