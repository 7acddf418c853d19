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
