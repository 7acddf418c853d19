"""The exit-code contract (issue 33, item 5): a bad config file, URL or number flag of analyze, batch and serve
exits 2 with one line on stderr, no traceback, before any model or Ray loads (nothing is printed about them)."""

from __future__ import annotations

import pytest

from tests.helpers.cli import run_cli

DEMO = "data/demo.mp4"


def assert_one_line_exit_2(proc, needle: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert lines[0].startswith("foresight") and needle in lines[0], lines[0]
    assert proc.stdout == ""  # no summary: the analysis never ran


def test_config_not_utf8_or_nested_too_deeply(tmp_path):
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"[analysis]\nfps = \"\xff\xfe\"\n")
    deep = tmp_path / "deep.toml"
    deep.write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")
    assert_one_line_exit_2(run_cli("analyze", DEMO, "--config", str(binary), timeout=60), "not UTF-8")
    assert_one_line_exit_2(run_cli("analyze", DEMO, "--config", str(deep), timeout=60), "nested too deeply")


@pytest.mark.parametrize("argv, needle", [
    (["analyze", DEMO, "--judge-url", "file:///etc/passwd"], "--judge-url"),
    (["analyze", DEMO, "--watchdog", "inf"], "--watchdog"),
    (["analyze", DEMO, "--reconnect-budget", "nan"], "--reconnect-budget"),
    (["batch", "data", "--out", "/nonexistent/out", "--parallel", "0"], "--parallel"),
    (["serve", "--port", "99999"], "--port"),
    (["serve", "--max-duration", "nan"], "--max-duration"),
    (["serve", "--max-duration", "-5"], "--max-duration"),
    (["serve", "--max-queue", "0"], "--max-queue"),
    (["serve", "--host", "256.1.1.1", "--port", "1"], "--host"),
])
def test_bad_flags_exit_2_with_one_line(argv, needle):
    assert_one_line_exit_2(run_cli(*argv, timeout=60), needle)


def test_config_values_go_through_the_same_checks(tmp_path):
    config = tmp_path / "f.toml"
    config.write_text('[analysis]\njudge-url = "file:///etc/passwd"\n')
    assert_one_line_exit_2(run_cli("analyze", DEMO, "--config", str(config), timeout=60), "judge-url")
