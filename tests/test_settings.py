"""One settings path for the CLI, the server and the dashboard: flags over a TOML config file, checked once."""

from __future__ import annotations

import pytest

from app.cli import build_parser as cli_parser
from app.server import build_parser as serve_parser
from app.server import make_settings
from app.services.settings import analysis_options, parse_args
from models.errors import BadInput
from pipelines import AnalyzeOptions, StageConfig
from tests.helpers.cli import run_cli

CONFIG = """
[analysis]
fps = 1.0
no-asr = true
events = "tags"

[analyze]
query = ["a phone rings"]

[serve]
max-queue = 4
"""


def parse_cli(argv: list[str], env: dict | None = None):
    parser = cli_parser()
    return parse_args(parser, argv, parser.config_targets, env=env or {})


def test_flags_win_over_the_config_file_and_surfaces_share_the_analysis_table(tmp_path):
    config = tmp_path / "foresight.toml"
    config.write_text(CONFIG)
    args = parse_cli(["analyze", "clip.mp4", "--config", str(config), "--fps", "3"])
    options = analysis_options(args)
    assert options.sample_fps == 3.0 and options.stages.asr is False and options.stages.events_model == "tags"
    assert options.grounding.queries == ["a phone rings"]
    batch = analysis_options(parse_cli(["batch", "videos", "--out", "o"], env={"FORESIGHT_CONFIG": str(config)}))
    assert batch.sample_fps == 1.0 and batch.grounding.queries == []  # [analyze] is not batch's table
    parser = serve_parser()
    settings = make_settings(parse_args(parser, ["--config", str(config)], {"serve": (parser, ("analysis", "serve"))},
                                        env={}))
    assert settings.max_queue == 4 and settings.options.stages.events_model == "tags"
    assert analysis_options(parse_cli(["analyze", "clip.mp4"])) == AnalyzeOptions(stages=StageConfig())


@pytest.mark.parametrize("text, reason", [
    ("[analysis]\nfps = \"fast\"\n", "not a number"),
    ("[analysis]\nevents = \"best\"\n", "must be one of"),
    ("[analysis]\nno-asr = 1\n", "true or false"),
    ("[analysis]\nmax-queue = 3\n", "unknown setting"),
    ("fps = 1.0\n", "put settings in the tables"),
    ("[analysis\n", "not valid TOML"),
])
def test_bad_config_files_are_refused_with_the_reason(tmp_path, text, reason):
    config = tmp_path / "bad.toml"
    config.write_text(text)
    with pytest.raises(BadInput, match=reason):
        parse_cli(["analyze", "clip.mp4", "--config", str(config)])


def test_cli_reports_a_bad_config_as_bad_input(tmp_path):
    proc = run_cli("analyze", "clip.mp4", "--config", str(tmp_path / "missing.toml"), timeout=60)
    assert proc.returncode == 2 and "cannot read config" in proc.stderr and "Traceback" not in proc.stderr


def test_method_flags_reach_the_stages(tmp_path):
    """--visual-prompt, --safety-escalation and --latency-budget configure the real stages they name."""
    import numpy as np

    from pipelines.stages.safety import SafetyStage
    from pipelines.stages.visual import VisualStage

    prompt = tmp_path / "camera.npz"
    dark = np.zeros((3, 4, 4), np.float32)  # gain 0 (channels first): the prompted frame is black, whatever comes
    np.savez(prompt, linear=np.eye(2), shift=np.zeros(2), gain=dark, pattern=dark)
    options = analysis_options(parse_cli(["analyze", "clip.mp4", "--visual-prompt", str(prompt),
                                          "--safety-escalation", "robust", "--latency-budget", "0.8"]))
    assert options.budget is not None and options.budget.latency_s == 0.8
    visual = VisualStage(options.stages)
    frame = np.full((90, 160, 3), 200, np.uint8)
    assert visual.analyzer.prompt is not None and visual.analyzer.prompt(frame).max() == 0
    assert SafetyStage(options.stages).monitor.escalation is not None


@pytest.mark.parametrize("argv, message", [
    (["--visual-prompt", "/nonexistent.npz"], "--visual-prompt"),
    (["--safety-escalation", "cautious"], "--safety-escalation"),
    (["--latency-budget", "-1"], "--latency-budget"),
])
def test_method_flags_refuse_bad_values(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:  # refused while the command line is read (app/validate.py)
        analysis_options(parse_cli(["analyze", "clip.mp4", *argv]))
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_recording_retention_from_flags_and_config(tmp_path, capsys):
    from ui.launch import dashboard_main

    config = tmp_path / "f.toml"
    config.write_text("[serve]\nrecord-minutes = 5\nkeep-days = 7\n")
    p = serve_parser()
    settings = make_settings(parse_args(p, ["--config", str(config), "--record-gb", "0.5", "--db", str(tmp_path / "f.db")],
                                        {"serve": (p, ("analysis", "serve"))}))
    assert (settings.retention.minutes, settings.retention.gb, settings.retention.keep_days) == (5.0, 0.5, 7.0)
    assert make_settings(serve_parser().parse_args([])).retention.keep_days == 30.0
    assert settings.recordings_dir == tmp_path / "recordings" and settings.retention.enabled
    off = make_settings(serve_parser().parse_args(["--record-minutes", "0"]))
    assert not off.retention.enabled  # 0 minutes: streams are not recorded
    with pytest.raises(SystemExit):
        make_settings(serve_parser().parse_args(["--record-gb", "0"]))
    assert "--record-gb" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        dashboard_main(["--db", str(tmp_path / "d.db"), "--record-minutes", "-1"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "--record-minutes" in err and len(err.strip().splitlines()) == 1
    for bad in ("-1", "nan", "inf"):
        with pytest.raises(SystemExit) as exit_:
            dashboard_main(["--db", str(tmp_path / "d.db"), "--keep-days", bad])
        err = capsys.readouterr().err
        assert exit_.value.code == 2 and "--keep-days" in err and len(err.strip().splitlines()) == 1
