"""The exit-code contract (issue 33, item 5): every bad number, path, URL, address and config file of analyze,
batch and serve exits 2 with one line on stderr while the command line is read, before a model loads or Ray
starts (nothing of theirs appears on stderr), and a failed write of --out leaves no `.tmp` behind."""

from __future__ import annotations

import pytest

from tests.helpers.cli import free_port, run_cli

# What model loading, Ray or uvicorn print once they start; none of it may appear before a bad-input exit.
STARTED = ("Traceback", "Ray", "raylet", "Uvicorn", "uvicorn", "Loading", "INFO", "SIGTERM")
UNWRITABLE = "/proc"  # no file can be created there, for root too (chmod 555 does not stop root)


def assert_refused(proc, needle: str) -> None:
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr[-2000:]
    assert lines[0].startswith("foresight") and ": error:" in lines[0] and needle in lines[0], lines[0]
    assert not any(mark in proc.stderr for mark in STARTED), proc.stderr[-2000:]


@pytest.mark.parametrize("flags,needle", [
    (("--max-duration", "nan"), "--max-duration"),
    (("--max-duration", "inf"), "--max-duration"),
    (("--max-queue", "-3"), "--max-queue"),
    (("--port", "99999"), "--port"),
    (("--host", "256.1.1.1"), "--host"),
    (("--host", "bad_name!"), "--host"),
    (("--grounder", "/etc/passwd"), "--grounder"),
    (("--db", f"{UNWRITABLE}/foresight.db"), "--db"),
    (("--judge-url", "file:///etc/passwd"), "--judge-url"),
])
def test_serve_refuses_bad_flags(tmp_path, flags, needle):
    args = ["serve", "--db", str(tmp_path / "f.db"), "--port", str(free_port()), *flags]
    assert_refused(run_cli(*args, timeout=60), needle)


def test_serve_refuses_a_port_in_use(tmp_path):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = run_cli("serve", "--db", str(tmp_path / "f.db"), "--port", str(port), timeout=60)
    assert_refused(proc, f"127.0.0.1:{port}")


@pytest.mark.parametrize("flags,needle", [
    (("--prefm-model", "/etc/passwd"), "--prefm-model"),
    (("--grounding-model", "/etc/passwd"), "--grounding-model"),
    (("--safety-escalation", "/etc/passwd"), "--safety-escalation"),
    (("--judge-url", "file:///etc/passwd"), "--judge-url"),
    (("--out", f"{UNWRITABLE}/result.json"), "--out"),
])
def test_analyze_refuses_bad_flags(demo_clip, flags, needle):
    assert_refused(run_cli("analyze", str(demo_clip[0]), *flags, timeout=60), needle)


def test_batch_refuses_bad_numbers(tmp_path):
    assert_refused(run_cli("batch", str(tmp_path), "--out", str(tmp_path / "o"), "--parallel", "0", timeout=60),
                   "--parallel")


@pytest.mark.parametrize("content,needle", [
    (b"[analysis]\nfps = 1.0\ncamera = \"\xff\xfe\"\n", "UTF-8"),
    (b"[analysis]\nx = " + b"[" * 5000 + b"]" * 5000 + b"\n", "too deeply"),
])
def test_unreadable_config_is_one_line(demo_clip, tmp_path, content, needle):
    config = tmp_path / "bad.toml"
    config.write_bytes(content)
    assert_refused(run_cli("analyze", str(demo_clip[0]), "--config", str(config), timeout=60), needle)


def test_failed_json_write_leaves_no_tmp(tmp_path, monkeypatch):
    from pipelines.sinks import exporters

    out = tmp_path / "r.json"

    def full_disk(self, *a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(exporters.Path, "replace", full_disk)
    with pytest.raises(OSError):
        exporters.write_json(out, {"events": []})
    assert list(tmp_path.iterdir()) == []


def test_analyze_caps_the_declared_duration(demo_clip):
    """The demo clip's container declares 20 s; a 5-s cap refuses it from the header, before any decoding."""
    assert_refused(run_cli("analyze", str(demo_clip[0]), "--max-duration", "5", timeout=60), "--max-duration 5")
    assert_refused(run_cli("analyze", str(demo_clip[0]), "--max-duration", "nan", timeout=60), "--max-duration")


@pytest.mark.parametrize("flags,needle", [
    (("--rounds", "0"), "--rounds"),
    (("--minutes", "-1"), "--minutes"),
    (("--clip", "/nonexistent/clip.mp4"), "no such clip"),
    (("--only", "bogus"), "unknown configuration"),
])
def test_the_text_on_screen_benchmark_refuses_bad_flags(flags, needle):
    """`benchmarks/analyze_vs_decode.py` says what is wrong and exits 2 before it builds or times anything."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "analyze_vs_decode.py"
    proc = subprocess.run([sys.executable, str(script), *flags], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "error:" in proc.stderr and needle in proc.stderr, proc.stderr[-2000:]
    assert "clip:" not in proc.stdout, proc.stdout
