"""The training-method registry and its two commands: discovery, tables, bad input."""

from __future__ import annotations

from tests.helpers.cli import run_cli
from training.experiment import NOT_METHODS, Result, format_table, method_names


def test_methods_are_discovered_and_model_packages_are_not():
    names = method_names()
    assert names == sorted(names)
    assert not set(names) & NOT_METHODS


def test_table_pads_columns_and_result_needs_every_check():
    table = format_table([{"model": "plain", "loss": 0.5}, {"model": "fan", "loss": 0.25, "steps": 10}])
    lines = table.splitlines()
    assert lines[0].split() == ["model", "loss", "steps"]
    assert set(lines[1]) <= {"-", " "}
    assert lines[3].split() == ["fan", "0.25", "10"]
    assert Result([], {}, {"a": True, "b": True}).held
    assert not Result([], {}, {"a": True, "b": False}).held
    assert not Result([], {}, {}).held


def test_unknown_method_is_bad_input():
    proc = run_cli("eval", "training", "--only", "no-such-method", timeout=120)
    assert proc.returncode == 2
    assert "unknown method" in proc.stderr and "Traceback" not in proc.stderr
