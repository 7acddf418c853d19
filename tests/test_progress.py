"""The progress display both runners feed: a file's tenths done, a live source's position and health."""

from __future__ import annotations

import pytest

from app.progress import Progress

STATS = {"health": "live", "reconnects": 1, "frames_dropped": 3}


def test_plain_lines_say_a_files_tenths_once_each_and_a_cameras_position_and_health(capsys):
    with Progress("plain") as shown:
        for second in range(1, 21):
            shown.update({"position": float(second), "duration": 20.0, "stats": STATS})
    lines = capsys.readouterr().err.splitlines()
    assert lines == [f"progress: {10 * k} %" for k in range(11)]
    with Progress("plain") as shown:
        for position in (1.0, 1.0, 2.0):
            shown.update({"position": position, "duration": None, "stats": STATS})
    assert capsys.readouterr().err.splitlines() == ["progress: 1 s, live, 1 reconnects, 3 frames dropped",
                                                    "progress: 2 s, live, 1 reconnects, 3 frames dropped"]


def test_no_display_prints_nothing_and_a_bad_mode_is_refused(capsys):
    with Progress("none") as shown:
        shown.update({"position": 5.0, "duration": 10.0, "stats": STATS})
    assert capsys.readouterr().err == ""
    with pytest.raises(ValueError):
        Progress("fancy")
