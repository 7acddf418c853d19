"""PreFM through ONNX Runtime (`models/prefm/runtime.py`): the shipped checkpoint's export gives torch's
probabilities (live ring buffer and batch windows, random and real features), and a process that finds the
export never imports torch."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

from models.prefm import SHIPPED_CHECKPOINT
from models.prefm.modeling_prefm import load_checkpoint
from models.prefm.online import OnlineParser, predict_windows
from models.prefm.runtime import OnnxPreFM, TorchPreFM, export_onnx, exported_path, load_inference

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
TOL = 1e-5


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """A fresh cache holding the shipped checkpoint's export, made once for the module (only the export sees
    it: the encoders' models stay in the machine's cache)."""
    root = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FORESIGHT_CACHE", str(root))
        torch.set_num_threads(1)
        start = time.perf_counter()
        path = export_onnx(SHIPPED_CHECKPOINT, exported_path(SHIPPED_CHECKPOINT))
        print(f"PreFM export: {time.perf_counter() - start:.2f} s")
    return root, path


@pytest.fixture(scope="module")
def models(cache):
    model, config, meta = load_checkpoint(SHIPPED_CHECKPOINT)
    return OnnxPreFM(cache[1]), model, config, meta


def max_diff(a: dict, b: dict) -> float:
    assert a.keys() == b.keys()
    return max(float(np.abs(a[k] - b[k]).max()) for k in a)


def compare_batch_and_live(onnx: OnnxPreFM, torch_model, audio: np.ndarray, visual: np.ndarray) -> float:
    batch_onnx, batch_torch = predict_windows(onnx, audio, visual), predict_windows(torch_model, audio, visual)
    worst = max_diff(batch_onnx, batch_torch)
    live_onnx, live_torch = OnlineParser(onnx, exclusive=False), OnlineParser(torch_model, exclusive=False)
    for t in range(audio.shape[0]):
        a, b = live_onnx.step(audio[t], visual[t]), live_torch.step(audio[t], visual[t])
        worst = max(worst, max_diff({"audio": a.audio, "visual": a.visual, "av": a.av},
                                    {"audio": b.audio, "visual": b.visual, "av": b.av}), max_diff(a.future, b.future))
        assert a.events == b.events
        np.testing.assert_allclose(a.av, batch_onnx["av"][t], atol=TOL)  # live = batch, as with torch
    return worst


def test_export_carries_the_checkpoint_config_and_metadata(models, cache):
    onnx, _, config, meta = models
    assert onnx.config == config and onnx.meta["covers"] == meta["covers"]
    assert onnx.inputs == ["audio_window", "visual_window"]
    assert cache[1].name.startswith("prefm-") and cache[1].parent == cache[0] / "onnx"


def test_onnx_matches_torch_on_random_features_live_and_batch(models):
    onnx, torch_model, config, _ = models
    rng = np.random.default_rng(0)
    seconds = 70  # two batches of windows (64 + 6): the batch axis is dynamic
    audio = rng.standard_normal((seconds, config.audio_dim)).astype(np.float32)
    visual = rng.random((seconds, config.visual_dim)).astype(np.float32)
    worst = compare_batch_and_live(onnx, torch_model, audio, visual)
    print(f"random features: max abs diff {worst:.2e}")
    assert worst <= TOL


def test_onnx_matches_torch_on_a_real_clip_live_and_batch(models, demo_clip):
    from models.encoders.registry import get_encoder
    from pipelines.sinks.feature_cache import encode_file

    onnx, torch_model, _, _ = models
    encoder = get_encoder("embedded")
    try:
        features, _ = encode_file(demo_clip[0], encoder)
    finally:
        encoder.close()
    assert features.num_seconds >= 10
    worst = compare_batch_and_live(onnx, torch_model, features.audio, features.visual)
    print(f"real clip ({features.num_seconds} s): max abs diff {worst:.2e}")
    assert worst <= TOL


def test_export_is_keyed_by_the_checkpoint_contents(cache, tmp_path, monkeypatch):
    monkeypatch.setenv("FORESIGHT_CACHE", str(cache[0]))
    copy = tmp_path / "copy.pt"
    shutil.copyfile(SHIPPED_CHECKPOINT, copy)
    assert exported_path(copy) == cache[1]  # same bytes elsewhere: the same export
    copy.write_bytes(copy.read_bytes() + b"\0")
    assert exported_path(copy) != cache[1]


def test_torch_backend_on_request(cache, monkeypatch):
    monkeypatch.setenv("FORESIGHT_CACHE", str(cache[0]))
    monkeypatch.setenv("FORESIGHT_PREFM", "torch")
    runner = load_inference(SHIPPED_CHECKPOINT)
    assert isinstance(runner, TorchPreFM) and runner.meta["variant"] == "prefm"
    monkeypatch.setenv("FORESIGHT_PREFM", "onnx")
    assert isinstance(load_inference(SHIPPED_CHECKPOINT), OnnxPreFM)


def test_attention_kinds_agree_with_the_layers():
    from models.layers.fan import ATTENTION_KINDS
    from models.prefm.config import ATTENTION_KINDS as CONFIG_KINDS

    assert CONFIG_KINDS == ATTENTION_KINDS


CHILD = """
import sys
import numpy as np
from pipelines.stages.config import StageConfig
from pipelines.stages.parser import ParserStage
from pipelines.stages.union import covered_classes
from models.prefm import SHIPPED_CHECKPOINT
from models.prefm.online import OnlineParser, predict_windows
stage = ParserStage(StageConfig())  # the default analysis' events: PreFM and the tags, unioned
parser = OnlineParser.from_pretrained()
c = parser.config
rng = np.random.default_rng(0)
audio, visual = rng.random((12, c.audio_dim), np.float32), rng.random((12, c.visual_dim), np.float32)
steps = [parser.step(audio[t], visual[t]) for t in range(12)]
batch = predict_windows(parser.model, audio, visual)
assert np.abs(steps[-1].av - batch["av"][-1]).max() <= 1e-5
assert "Speech" in covered_classes(str(SHIPPED_CHECKPOINT))["audio"]
print(type(parser.model).__name__, "torch" in sys.modules)
"""


def test_a_process_with_the_export_never_imports_torch(cache):
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "FORESIGHT_CACHE": str(cache[0])}
    env.pop("FORESIGHT_PREFM", None)
    proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split()[-2:] == ["OnnxPreFM", "False"], proc.stdout
