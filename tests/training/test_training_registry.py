"""The training-method registry and its two commands: discovery, tables, bad input."""

from __future__ import annotations

import json
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


def test_spread_folds_each_sd_into_its_figure_on_a_real_multi_seed_run():
    from training.methods.fanformer.experiment import run

    result = run(steps=20, seeds=2)  # two real seeds of the FANformer toy, 20 steps each
    assert result.seeds == 2 and result.to_json()["seeds"] == 2
    spread = result.spread()
    assert not any(k.endswith("_sd") for k in spread)
    fan_row = next(r for r in result.rows if r["attention"] == "fan" and r["step"] == 20)
    assert spread["test_mse_fan"] == {"mean": fan_row["test_mse_mean"], "sd": fan_row["test_mse_sd"]}
    assert spread["test_mse_fan"]["sd"] > 0
    assert spread["param_ratio_fan_over_plain"]["sd"] is None  # not a per-seed quantity
    assert Result([], {"x": 1.0}, {"a": True}).spread() == {"x": {"mean": 1.0, "sd": None}}


def test_eval_training_prints_one_json_line_per_method_and_a_table():
    proc = run_cli("eval", "training", "--only", "cce", "--json", timeout=600)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1
    line = json.loads(lines[0])
    assert line["method"] == "cce" and line["held"] is True and line["seeds"] == 1
    assert line["figures"] and all(set(v) == {"mean", "sd"} and v["sd"] is None for v in line["figures"].values())
    assert line["checks"] and all(line["checks"].values())
    table = run_cli("eval", "training", "--only", "cce", timeout=600)
    assert table.returncode == 0, table.stderr
    header, _, row = table.stdout.splitlines()[:3]
    assert header.split()[:4] == ["method", "held", "seeds", "s"] and row.split()[:3] == ["cce", "held", "1"]
