"""End to end on the Ray actor spine with the real models: speech, transcript, sound events, the CLI."""

from __future__ import annotations

import json
import re

from pipelines.synth import DEMO_TEXT
from tests.conftest import run_cli


def words(text: str) -> list[str]:
    return re.findall(r"[a-z']+", text.lower())


def wer(ref: list[str], hyp: list[str]) -> float:
    d = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, d[0] = d[0], i
        for j, h in enumerate(hyp, 1):
            prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (r != h))
    return d[-1] / len(ref)


def iou(a: tuple[float, float], b: tuple[float, float]) -> float:
    inter = max(0.0, min(a[1], b[1]) - max(a[0], b[0]))
    return inter / (max(a[1], b[1]) - min(a[0], b[0]))


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

    speech = [e for e in result["events"] if e["label"] == "Speech"]
    assert speech and max(iou((e["start"], e["end"]), truth.speech) for e in speech) > 0.7
    assert all(e["modality"] in ("audio", "visual", "audio-visual") for e in result["events"])
    # The phone rings and the alarm clock goes off after the speech: sound events there, none before 1 s.
    phone_like = [e for e in result["events"] if e["label"] != "Speech"
                  and e["start"] < truth.alarm[1] and e["end"] > truth.phone[0]]
    assert any(re.search(r"Telephone|Ringtone|Alarm|Bell|Beep|Buzzer", e["label"]) for e in phone_like), phone_like
    assert not any(e["end"] <= truth.speech[0] and e["modality"] == "audio" for e in result["events"])
    # The first two pictures (astronaut, camera man) show people: a visual Person event, and per-second records.
    people = [e for e in result["events"] if e["label"] == "Person" and e["modality"] == "visual"]
    assert people and people[0]["start"] < 4.0
    seconds = result["seconds"]
    assert len(seconds) == round(truth.duration_s) and seconds[0]["persons"] >= 1
    assert all("audio_tags" in r and "objects" in r and "camera_trouble" in r for r in seconds)
