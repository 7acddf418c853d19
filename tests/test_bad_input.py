"""Bad input gets exit status 2 and a one-line reason, quickly, never a traceback or a hang."""

from __future__ import annotations

import time

import pytest

from tests.conftest import free_port, run_cli


def assert_clean_failure(proc, needle: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert lines[0].startswith("foresight: error:") and needle in lines[0], lines[0]


@pytest.mark.parametrize("name,content,needle", [
    ("empty.mp4", b"", "is empty"),
    ("notes.mp4", b"these are not video frames\n" * 100, "not a readable media file"),
    ("noise.mkv", bytes(range(256)) * 400, "not a readable media file"),
])
def test_unusable_files(tmp_path, name, content, needle):
    path = tmp_path / name
    path.write_bytes(content)
    assert_clean_failure(run_cli("analyze", str(path), timeout=60), needle)


def test_truncated_mp4(tmp_path, demo_clip):
    data = demo_clip[0].read_bytes()
    path = tmp_path / "truncated.mp4"
    path.write_bytes(data[: len(data) // 3])  # PyAV writes the index at the end: it is gone
    assert_clean_failure(run_cli("analyze", str(path), timeout=60), "truncated.mp4")


def test_missing_file_and_directory(tmp_path):
    assert_clean_failure(run_cli("analyze", str(tmp_path / "nope.mp4")), "no such file")
    assert_clean_failure(run_cli("analyze", str(tmp_path)), "is a directory")


def test_refused_rtsp_url_fails_fast():
    start = time.time()
    proc = run_cli("analyze", f"rtsp://127.0.0.1:{free_port()}/live", timeout=60)
    assert_clean_failure(proc, "connection refused")
    assert time.time() - start < 45


def test_bad_options(demo_clip):
    assert_clean_failure(run_cli("analyze", str(demo_clip[0]), "--fps", "0"), "--fps")
    proc = run_cli("analyze")
    assert proc.returncode == 2 and "usage" in proc.stderr and "Traceback" not in proc.stderr
