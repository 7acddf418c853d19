"""Batch over a folder on Ray tasks, the SQLite store, and resuming after SIGKILL with nothing lost."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time

import numpy as np
import pytest

from pipelines.sinks.results import stable_view
from pipelines.sinks.store import Store
from tests.helpers.cli import FORESIGHT, ROOT, run_cli
from training.media.synth import RATE, ClipSpec, place, speak, write_clip

SENTENCES = ["The red car is parked outside.", "Open the window please.", "My password is secret.",
             "The dog is barking loudly.", "Turn off the kitchen lights."]


@pytest.fixture(scope="module")
def clip_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("clips")
    for i, text in enumerate(SENTENCES):
        speech = speak(text)
        track = np.zeros(int((speech.size / RATE + 2.0) * RATE), np.float32)
        place(track, speech, 1.0)
        shade = 40 * i

        def frame(t, shade=shade):
            return np.full((120, 160, 3), shade, np.uint8)
        write_clip(folder / f"clip{i}.mp4", ClipSpec(track.size / RATE, 10, 160, 120, frame, track))
    (folder / "sub").mkdir()
    (folder / "sub" / "broken.mp4").write_bytes(b"\x00" * 5000)
    return folder


def stable_lines(path):
    return [stable_view(json.loads(line)) for line in path.read_text().splitlines()]


def test_store_is_wal_and_replaces_results_atomically(tmp_path):
    store = Store(tmp_path / "f.db")
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    job = store.create_job("analyze", "a.mp4")
    result = {"source": "a.mp4", "events": [{"label": "Speech", "modality": "audio", "start": 1, "end": 2,
                                             "confidence": 0.9}],
              "transcript": [{"start": 1, "end": 2, "text": "hi"}], "moments": [], "alerts": []}
    store.save_result(job, result)
    store.save_result(job, result)  # saving again replaces, never duplicates
    assert len(store.rows("events", job)) == 1 and store.job(job)["status"] == "done"
    assert store.result(job) == result
    other = sqlite3.connect(tmp_path / "f.db")  # a second process-style reader sees committed rows
    assert other.execute("SELECT COUNT(*) FROM transcript").fetchone()[0] == 1


@pytest.mark.slow
def test_batch_outputs_failures_and_resume_after_sigkill(clip_folder, tmp_path):
    full = tmp_path / "full"
    proc = run_cli("batch", str(clip_folder), "--out", str(full), "--no-tags", timeout=600)
    assert proc.returncode == 2, proc.stderr  # one broken file: reported, the rest done
    assert "5 done" in proc.stdout and "1 failed" in proc.stdout
    assert "sub/broken.mp4" in (full / "summary.md").read_text()
    lines = stable_lines(full / "results.jsonl")
    assert [r["source"] for r in lines] == [f"clip{i}.mp4" for i in range(5)]
    for text, result in zip(SENTENCES, lines, strict=True):
        said = " ".join(t["text"] for t in result["transcript"]).lower()
        assert text.split()[1].lower() in said
    vtt = (full / "clip2.mp4.vtt").read_text()
    assert vtt.startswith("WEBVTT") and "-->" in vtt and "password" in vtt.lower()

    # Kill a second run with SIGKILL as soon as its first file is stored, then run again.
    resumed = tmp_path / "resumed"
    p = subprocess.Popen([*FORESIGHT, "batch", str(clip_folder), "--out", str(resumed), "--no-tags", "-q"],
                         cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 300
    done = 0
    while time.time() < deadline and p.poll() is None:
        db = resumed / "foresight.db"
        if db.exists():
            try:
                done = sqlite3.connect(db).execute("SELECT COUNT(*) FROM jobs WHERE status='done'").fetchone()[0]
            except sqlite3.OperationalError:
                done = 0
            if done >= 1:
                break
        time.sleep(0.2)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    assert 1 <= done < 5, "the kill should land in the middle of the batch"
    proc = run_cli("batch", str(clip_folder), "--out", str(resumed), "--no-tags", timeout=600)
    assert f"({done} from earlier runs)" in proc.stdout, proc.stdout
    assert stable_lines(resumed / "results.jsonl") == lines
    store = Store(resumed / "foresight.db")
    assert store.count_jobs(["done"]) == 5 and store.count_jobs(["failed"]) == 1


def test_identical_files_share_the_analysis_but_keep_their_own_results(tmp_path):
    folder, out = tmp_path / "copies", tmp_path / "out"
    folder.mkdir()
    write_clip(folder / "a.mp4", ClipSpec(2.0, 5, 64, 48, lambda t: np.full((48, 64, 3), 99, np.uint8),
                                          np.zeros(2 * RATE, np.float32)))
    for name in ("b.mp4", "c.mp4", "sub/d.mp4"):
        (folder / name).parent.mkdir(exist_ok=True)
        (folder / name).write_bytes((folder / "a.mp4").read_bytes())
    names = ["a.mp4", "b.mp4", "c.mp4", "sub/d.mp4"]
    flags = ("--no-asr", "--no-tags", "--no-visual", "--no-safety", "-q")
    for _ in range(2):  # the second run takes everything from the store, as a rerun after a kill would
        proc = run_cli("batch", str(folder), "--out", str(out), *flags, timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert [json.loads(line)["source"] for line in (out / "results.jsonl").read_text().splitlines()] == names
        assert all(json.loads((out / (n + ".json")).read_text())["source"] == n for n in names)
    assert Store(out / "foresight.db").count_jobs(["done"]) == 1


def test_a_file_cut_short_is_done_with_its_warning_in_the_summary(tmp_path, demo_clip):
    """An interrupted copy in the folder is analysed as far as it goes, and summary.md says it was cut short
    (before, its row read as the whole 20-s clip's)."""
    folder, out = tmp_path / "cut", tmp_path / "out"
    folder.mkdir()
    data = demo_clip[0].read_bytes()
    (folder / "whole.mp4").write_bytes(data)
    (folder / "cut.mp4").write_bytes(data[: len(data) // 3])
    proc = run_cli("batch", str(folder), "--out", str(out), "--no-asr", "--no-tags", "--no-visual", "--no-safety",
                   "-q", timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {line.split("|")[1].strip(): line for line in (out / "summary.md").read_text().splitlines()[2:]}
    assert "short of the 20.0 s its header declares" in rows["cut.mp4"], rows
    assert rows["whole.mp4"].rstrip().endswith("|  |"), rows["whole.mp4"]  # no warning


def test_batch_max_duration_fails_long_files_with_the_reason(clip_folder, tmp_path):
    proc = run_cli("batch", str(clip_folder), "--out", str(tmp_path / "out"), "--max-duration", "1.5", "-q",
                   timeout=300)
    assert proc.returncode == 2, proc.stderr
    store = Store(tmp_path / "out" / "foresight.db")
    errors = [row["error"] for row in store.recent_jobs(20)]
    assert store.count_jobs(["done"]) == 0 and store.count_jobs(["failed"]) == 6
    assert sum("the limit is --max-duration 1.5 s" in e for e in errors) == 5, errors  # the broken file: its own
    assert run_cli("batch", str(clip_folder), "--out", str(tmp_path / "x"), "--max-duration", "-1").returncode == 2


@pytest.mark.slow
def test_a_killed_batch_leaves_no_ray_process(clip_folder, tmp_path):
    """`kill -9` of the batch process alone (not its group): the reaper ends the local cluster, agents included."""
    from pipelines.spine.reaper import _alive, descendants

    def cmdline(pid: int) -> bytes:
        try:
            return open(f"/proc/{pid}/cmdline", "rb").read()
        except OSError:  # ended meanwhile
            return b""

    p = subprocess.Popen([*FORESIGHT, "batch", str(clip_folder), "--out", str(tmp_path / "out"), "-q"], cwd=ROOT,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline, ray_procs = time.time() + 240, {}
        while time.time() < deadline and p.poll() is None and len(ray_procs) < 4:  # GCS, raylet, agents, workers
            ray_procs = {pid: s for pid, s in descendants(p.pid).items()
                         if b"ray" in cmdline(pid).lower()}
            time.sleep(0.5)
        assert len(ray_procs) >= 4, ray_procs
        time.sleep(2)  # let the reaper see them too
        ray_procs.update(descendants(p.pid))
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        deadline = time.time() + 20
        while time.time() < deadline and any(_alive(pid, s) for pid, s in ray_procs.items()):
            time.sleep(0.5)
        left = [cmdline(pid)[:80] for pid, s in ray_procs.items() if _alive(pid, s)]
        assert left == []
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
