"""MiniLM through ONNX Runtime gives sentence-transformers' vectors, exports once, and needs no torch after that."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from models.minilm import (
    OnnxSentenceModel,
    TorchSentenceModel,
    exported_path,
    load_sentence_model,
    minilm_dir,
    onnx_exportable,
)

TEXTS = ["a dog is barking", "Someone asks for the network password, please.", "people applaud", "x",
         "The phone is ringing in the kitchen. " * 40,  # over the 256-token limit: truncated alike
         "Ünïcödé wörds, numbers 12345 and punctuation?!"]


def test_onnx_vectors_match_sentence_transformers():
    onnx_model = load_sentence_model(minilm_dir())
    assert isinstance(onnx_model, OnnxSentenceModel)
    reference = TorchSentenceModel(minilm_dir()).encode(TEXTS)
    batched = onnx_model.encode(TEXTS, batch_size=4)
    alone = np.stack([onnx_model.encode([t])[0] for t in TEXTS])
    assert batched.shape == (len(TEXTS), 384) and batched.dtype == np.float32
    assert np.abs(batched - reference).max() < 1e-6
    assert np.abs(alone - reference).max() < 1e-6
    np.testing.assert_allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-6)


def test_a_later_process_opens_the_export_without_importing_torch():
    load_sentence_model(minilm_dir())  # exports when this machine has no export yet
    assert exported_path(minilm_dir()).is_file()
    code = ("import sys; from models.minilm import load_sentence_model; from models.minilm import minilm_dir; "
            "m = load_sentence_model(minilm_dir()); v = m.encode(['a dog is barking']); "
            "print(type(m).__name__, v.shape, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["OnnxSentenceModel", "(1,", "384)", "False"]


def test_other_pipelines_and_the_switch_use_sentence_transformers(tmp_path, monkeypatch):
    folder = tmp_path / "cls-pooled"
    shutil.copytree(minilm_dir(), folder)
    pooling = folder / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    config.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    pooling.write_text(json.dumps(config))
    assert onnx_exportable(minilm_dir()) and not onnx_exportable(folder)
    assert isinstance(load_sentence_model(folder), TorchSentenceModel)
    monkeypatch.setenv("FORESIGHT_MINILM", "torch")
    from models.minilm import _load

    assert isinstance(_load(minilm_dir()), TorchSentenceModel)


@pytest.mark.parametrize("broken", [b"", b"not an onnx file"])
def test_a_broken_export_falls_back_with_a_warning(tmp_path, monkeypatch, caplog, broken):
    monkeypatch.setenv("FORESIGHT_CACHE", str(tmp_path))
    path = exported_path(minilm_dir())
    path.parent.mkdir(parents=True)
    path.write_bytes(broken)
    from models.minilm import _load

    with caplog.at_level("WARNING"):
        model = _load(minilm_dir())
    assert isinstance(model, TorchSentenceModel)
    assert "sentence-transformers" in caplog.text


def test_the_safety_stage_builds_when_no_rule_vector_is_stored_yet(tmp_path):
    """A fresh machine: the stage's builder holds the shared-model lock while the embedder's loader thread loads
    MiniLM for the rule vectors it waits for (this deadlocked once; the export is copied in, so only the stored
    rule vectors are missing)."""
    load_sentence_model(minilm_dir())
    cached = exported_path(minilm_dir())
    target = tmp_path / "onnx" / cached.name
    target.parent.mkdir()
    shutil.copyfile(cached, target)
    code = ("from pipelines.stages.config import StageConfig; from pipelines.stages.safety import SafetyStage; "
            "stage = SafetyStage(StageConfig()); print(stage.monitor.retriever.rule_emb_text.shape)")
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                             env={**os.environ, "PYTHONPATH": os.getcwd(), "FORESIGHT_CACHE": str(tmp_path)})
    except subprocess.TimeoutExpired:
        pytest.fail("building the safety stage hung")
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-1] == "384)" and list((tmp_path / "arrays").glob("minilm-*.npy"))
