"""The detector interface (models/encoders/detectors.py) with real weights, and `--detector` on the surfaces."""

from __future__ import annotations

import numpy as np
import pytest
from skimage import data

from app.cli import build_parser
from app.services.settings import analysis_options, parse_args
from models.encoders.detectors import DETECTOR_NAMES, make_detector
from models.errors import BadInput
from tests.helpers.cli import run_cli


@pytest.fixture(scope="module")
def ssd():
    return make_detector("ssd-mobilenetv2")


def test_ssd_finds_the_astronaut_and_the_cup_not_a_toilet(ssd):
    astronaut = ssd.detect(np.ascontiguousarray(data.astronaut()))
    assert astronaut and astronaut[0]["label"] == "person" and astronaut[0]["score"] > 0.5
    h, w = data.astronaut().shape[:2]
    x0, y0, x1, y1 = astronaut[0]["box"]
    assert 0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h  # pixels of that frame
    coffee = ssd.detect(np.ascontiguousarray(data.coffee()))
    labels = [d["label"] for d in coffee]
    assert "cup" in labels and "toilet" not in labels
    assert ssd.name == "ssd-mobilenetv2" and len(ssd.labels) == 80 and set(labels) <= set(ssd.labels)


def test_ssd_batches_give_the_same_detections_and_are_remembered(ssd):
    frames = [np.ascontiguousarray(data.astronaut()), np.ascontiguousarray(data.coffee())]
    alone = [ssd.detect(f) for f in frames]
    ssd.remember(frames)
    before = ssd.served_from_batch
    assert [ssd.detect(f) for f in frames] == alone and ssd.served_from_batch == before + 2


def test_unknown_detector_names_the_choices():
    with pytest.raises(BadInput, match="yolov3-tiny, ssd-mobilenetv2"):
        make_detector("bogus")


def test_cli_refuses_a_bogus_detector_in_one_line():
    proc = run_cli("analyze", "data/demo.mp4", "--detector", "bogus", timeout=60)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and len(lines) == 1
    assert all(name in lines[0] for name in DETECTOR_NAMES)


def test_toml_detector_reaches_the_stage_config(tmp_path):
    config = tmp_path / "f.toml"
    config.write_text('[analysis]\ndetector = "ssd-mobilenetv2"\n')
    parser = build_parser()
    args = parse_args(parser, ["analyze", "clip.mp4", "--config", str(config)], parser.config_targets, env={})
    assert analysis_options(args).stages.detector == "ssd-mobilenetv2"
