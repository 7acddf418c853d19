"""Batch over the folders users have: names that are not UTF-8 or too long for an output name, files and folders
it may not read, a rerun under other settings, and OUTDIRs it cannot use or another batch holds."""

from __future__ import annotations

import fcntl
import json
import os
import shutil

import numpy as np
import pytest

from tests.helpers.cli import run_cli
from training.media.synth import RATE, ClipSpec, place, speak, write_clip

QUIET = ("--no-asr", "--no-tags", "--no-visual", "--no-safety", "-q")


def _clip(path, shade: int, text: str | None = None) -> None:
    track = np.zeros(3 * RATE, np.float32)
    if text:
        place(track, speak(text), 0.5)
    write_clip(path, ClipSpec(3.0, 5, 64, 48, lambda t: np.full((48, 64, 3), shade, np.uint8), track))


def _as_user(*args: str, timeout: float = 300):
    """The CLI without root's right to read any file (a test run as root), so modes apply as to a user."""
    if os.geteuid() != 0:
        return run_cli(*args, timeout=timeout)
    if shutil.which("setpriv") is None:
        pytest.fail("setpriv (util-linux) is required to drop root's file rights")
    import subprocess

    from tests.helpers.cli import FORESIGHT, ROOT
    caps = "-dac_override,-dac_read_search"
    return subprocess.run(["setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}", "--", *FORESIGHT, *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def _rows(out) -> dict[str, list[str]]:
    lines = (out / "summary.md").read_text().splitlines()[2:]
    return {cells[1].strip(): [c.strip() for c in cells[2:]] for cells in (line.split("|") for line in lines)}


def test_names_and_rights_a_folder_may_hold(tmp_path):
    """Before, a file name that is not UTF-8 stopped the batch before any file (SQLite refused the name), a name
    of 251 characters stopped it at its output `<name>.json.tmp` (and every rerun), and a file it may not read
    stopped it (exit 1) while hashing, with nothing analysed; a folder it may not read was skipped without a word.
    Now each is a row: the odd name analysed and shown with U+FFFD, the long one analysed with its outputs under a
    shortened name, the unreadable file and folder failed with the reason, and the rest done (exit 2)."""
    folder, out = tmp_path / "in", tmp_path / "out"
    (folder / "locked").mkdir(parents=True)
    _clip(folder / "ok.mp4", 30)
    odd = os.fsdecode(b"caf\xe9.mp4")  # Latin-1, as old cameras and Windows archives write
    _clip(folder / odd, 60)
    long = "x" * 251 + ".mp4"
    _clip(folder / long, 90)
    _clip(folder / "secret.mp4", 120)
    _clip(folder / "locked" / "inside.mp4", 150)
    (folder / "secret.mp4").chmod(0)
    (folder / "locked").chmod(0)
    try:
        proc = _as_user("batch", str(folder), "--out", str(out), "--parallel", "1", *QUIET)
    finally:
        (folder / "locked").chmod(0o755)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    rows = _rows(out)
    assert rows["caf\ufffd.mp4"][0] == "done" and rows["ok.mp4"][0] == "done" and rows[long][0] == "done", rows
    assert rows["secret.mp4"][0] == "failed" and "cannot read it (Permission denied)" in rows["secret.mp4"][6]
    assert rows["locked"][0] == "failed" and "Permission denied" in rows["locked"][6], rows
    sources = [json.loads(line)["source"] for line in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(sources) == sorted(["caf\ufffd.mp4", "ok.mp4", long])
    assert (out / (odd + ".json")).is_file() and (out / (odd + ".vtt")).is_file()
    (json_out,) = [p for p in out.iterdir() if p.name.startswith("x" * 200) and p.suffix == ".json"]
    assert len(os.fsencode(json_out.name)) <= 255 - len(".tmp") and json.loads(json_out.read_text())["source"] == long


def test_a_rerun_under_other_settings_analyses_again(tmp_path):
    """Jobs were keyed by the file's content alone, so a folder first run with `--no-asr` kept its empty
    transcripts when run again with speech on ("1 done (1 from earlier runs)"). The settings are in the key now;
    a rerun under the same settings still takes everything from the store."""
    folder, out = tmp_path / "in", tmp_path / "out"
    folder.mkdir()
    _clip(folder / "talk.mp4", 80, "Open the window please.")
    speech = ("--no-tags", "--no-visual", "--no-safety", "-q")
    assert run_cli("batch", str(folder), "--out", str(out), "--no-asr", *speech[:-1]).returncode == 0
    assert _rows(out)["talk.mp4"][3] == "0"  # transcript words
    for _ in range(2):
        proc = run_cli("batch", str(folder), "--out", str(out), *speech[:-1])
        assert proc.returncode == 0, proc.stderr
        assert int(_rows(out)["talk.mp4"][3]) >= 3, proc.stdout
    assert "1 done (1 from earlier runs)" in proc.stdout  # the second run with speech on redid nothing


def test_outdirs_it_cannot_use_are_refused_with_the_reason(tmp_path):
    """OUTDIR a file, a file that is not a store in its place, or an OUTDIR another batch holds: exit 2 and one
    line before anything is analysed (before: exit 1 with an internal error, or, for two batches at once, both
    redoing all the work and one crashing on the other's `results.jsonl.tmp`); an empty `--out` is no longer the
    current folder."""
    folder = tmp_path / "in"
    folder.mkdir()
    _clip(folder / "a.mp4", 10)
    (tmp_path / "file").write_text("x")
    bad_db = tmp_path / "bad"
    bad_db.mkdir()
    (bad_db / "foresight.db").write_text("not sqlite " * 200)
    held = tmp_path / "held"
    held.mkdir()
    cases = [(str(tmp_path / "file"), "is not a folder"), (str(tmp_path / "file" / "sub"), "Not a directory"),
             (str(bad_db), "is not a Foresight store"), (str(held), "another batch is writing to"),
             ("", "--out: is empty")]
    with open(held / ".foresight-batch.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        for out, needle in cases:
            proc = run_cli("batch", str(folder), "--out", out, *QUIET, timeout=120)
            lines = proc.stderr.strip().splitlines()
            assert proc.returncode == 2 and len(lines) == 1 and needle in lines[0], (out, proc.stderr)
    assert not (held / "foresight.db").exists()
