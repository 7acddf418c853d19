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


def test_a_frame_already_in_a_batch_is_not_detected_again(ssd, monkeypatch):
    """A stream's next key frame joins the batch of every call that runs before its own turn: the first batch
    detects it, the later ones must not (under a backlog each waiting frame was detected once per batch)."""
    astronaut, coffee, camera = (np.ascontiguousarray(d()) for d in (data.astronaut, data.coffee, data.camera))
    camera = np.ascontiguousarray(np.stack([camera] * 3, axis=-1))
    alone = {id(f): ssd.detect(f) for f in (astronaut, coffee, camera)}
    ran: list[int] = []
    detect_many = ssd.detect_many
    monkeypatch.setattr(ssd, "detect_many", lambda frames: (ran.extend(id(f) for f in frames), detect_many(frames))[1])
    ssd.remember([astronaut, coffee])  # the astronaut's stream runs; the coffee's waits
    ssd.remember([camera, coffee])  # another stream runs first: its batch holds the waiting coffee again
    ssd.remember([coffee])
    assert ran == [id(astronaut), id(coffee), id(camera)]
    assert all(ssd.detect(f) == alone[id(f)] for f in (astronaut, coffee, camera))  # each from its batch
    assert ran == [id(astronaut), id(coffee), id(camera)]
    ssd.detect(coffee)  # taken once: a second call on the same frame runs the model
    assert ran[-1] == id(coffee) and len(ran) == 4


def _opencv_rows(frames: list[np.ndarray]) -> list[np.ndarray]:
    """OpenCV DNN's own reading of the same frozen graph: what the detector ran on before ONNX Runtime."""
    import cv2

    from models.encoders.weights import ssd_files

    net = cv2.dnn.readNetFromTensorflow(*(str(f) for f in ssd_files()))
    out = []
    for f in frames:
        net.setInput(cv2.dnn.blobFromImages([f], 1.0, (300, 300), swapRB=False, crop=False))
        out.append(net.forward().reshape(-1, 7))
    return out


def test_the_onnx_conversion_gives_opencvs_detections(ssd):
    """The converted graph and our decoding against OpenCV's reading of the frozen graph (its convolutions and
    its DetectionOutput layer), on real photos and demo frames: the same boxes, classes and scores."""
    import av
    import cv2

    from models.encoders.ssd_onnx import decode, ssd_onnx

    frames = [np.ascontiguousarray(data.astronaut()), np.ascontiguousarray(data.coffee()),
              np.ascontiguousarray(data.chelsea())]
    with av.open("data/demo.mp4") as c:
        frames += [f.to_ndarray(format="rgb24") for i, f in enumerate(c.decode(video=0)) if i in (0, 120, 240, 300)]
    blob = cv2.dnn.blobFromImages(frames, 1.0, (300, 300), swapRB=False, crop=False)
    boxes, scores, priors = ssd.session.run(None, {"image": blob})
    assert priors.shape == (2, 1917 * 4) and scores.shape == (len(frames), 1917 * 91)
    compared = 0
    for ref, b, s in zip(_opencv_rows(frames), boxes, scores, strict=True):
        ours = decode(b, s, priors)
        ref, ours = ref[ref[:, 2] >= 0.05], ours[ours[:, 2] >= 0.05]
        assert len(ours) == len(ref) > 0
        np.testing.assert_array_equal(ours[:, 1], ref[:, 1])  # the same classes, in the same order
        np.testing.assert_allclose(ours[:, 2:], ref[:, 2:], atol=1e-4)
        compared += len(ref)
    assert compared > 100
    path = ssd_onnx()
    stamp = path.stat().st_mtime_ns
    assert ssd_onnx() == path and path.stat().st_mtime_ns == stamp  # the cached file, not converted again


def test_the_frozen_graph_reader_names_what_it_cannot_give(tmp_path):
    from models.encoders.tf_frozen import frozen_constants, text_graph
    from models.encoders.weights import ssd_files

    pb, _ = ssd_files()
    with pytest.raises(ValueError, match="lacks the constants.*no/such/weights"):
        frozen_constants(pb, {"no/such/weights"})
    bad = tmp_path / "bad.pbtxt"
    bad.write_text('node { name: "x" op: "Const" }\n@@@\n')
    with pytest.raises(ValueError, match="cannot read text at offset"):
        text_graph(bad)


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
