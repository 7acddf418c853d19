"""The training-method registry and its two commands: discovery, tables, bad input."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.cli import run_cli
from training.methods.runner import Result, format_table, method_names

TRAINING = Path(__file__).resolve().parents[2] / "training"


def test_the_16_methods_live_under_training_methods_and_our_own_models_beside_them():
    names = method_names()
    assert names == sorted(names) and len(names) == 16, names
    assert not set(names) & {"corpus", "prefm", "trisense", "safety", "perception"}
    assert not [p.parent.name for p in TRAINING.glob("*/experiment.py")]  # no method left beside them
    for own in ("corpus", "prefm", "trisense", "safety", "perception"):
        assert (TRAINING / own / "__init__.py").is_file()  # our own models' training stays in training/


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


def test_a_method_whose_extra_is_missing_exits_2_naming_the_extra():
    import subprocess
    import sys

    from tests.helpers.cli import ROOT

    hide = "import sys; sys.modules['rdkit'] = None; from app.cli import main; sys.exit(main(['train', 'spice']))"
    out = subprocess.run([sys.executable, "-c", hide], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr[-2000:]
    assert "needs rdkit" in out.stderr and "requirements-methods.txt" in out.stderr
    assert "Traceback" not in out.stderr
