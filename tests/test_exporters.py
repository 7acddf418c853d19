"""Result files: atomic for regular files, and never a rename over a device or a pipe."""

from __future__ import annotations

import json
import os
import stat
import threading

from pipelines.sinks.exporters import write_json


def test_json_goes_through_a_pipe_and_leaves_it_a_pipe(tmp_path):
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    write_json(fifo, {"events": []})
    reader.join(timeout=10)
    assert json.loads(got[0]) == {"events": []}
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # a rename would have put a regular file in its place
    assert not (tmp_path / "out.json.tmp").exists()


def test_regular_files_are_replaced_whole(tmp_path):
    out = tmp_path / "r.json"
    out.write_text("old")
    write_json(out, {"a": 1})
    assert json.loads(out.read_text()) == {"a": 1} and not (tmp_path / "r.json.tmp").exists()


def test_csv_lists_events_speech_and_alerts_in_time_order():
    import csv
    import io

    from pipelines.sinks.exporters import to_csv

    result = {"events": [{"label": "Fire_alarm", "modality": "audio", "start": 12.0, "end": 19.0, "confidence": 0.9}],
              "transcript": [{"start": 1.0, "end": 8.5, "text": 'Hello, "front door"'}],
              "alerts": [{"time": 13.0, "severity": "critical", "rule": "alarm", "reason": "people stay",
                          "lead_time_s": None}]}
    rows = list(csv.reader(io.StringIO(to_csv(result))))
    assert rows[0] == ["kind", "start", "end", "label", "modality", "score"]
    assert [r[0] for r in rows[1:]] == ["speech", "event", "alert"]
    assert rows[1][3] == 'Hello, "front door"' and rows[2][5] == "0.9" and rows[3][3] == "alarm: people stay"
