"""The shipped embedded checkpoints: they load with the project's loaders, take the embedded encoder's
feature sizes, and (slow) find the events of a freshly composed and encoded clip."""

from __future__ import annotations

import numpy as np
import pytest

from models import prefm, trisense
from models.encoders.audio_features import AUDIO_DIM
from models.encoders.visual import VISUAL_DIM
from models.prefm.labels import LLP_CLASSES, LLP_INDEX

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
PREFM_CKPT = prefm.SHIPPED_CHECKPOINT
GROUNDER_CKPT = trisense.CORPUS_V1_CHECKPOINT


def test_checkpoints_are_small_enough_for_the_repo():
    for path in (PREFM_CKPT, GROUNDER_CKPT):
        assert path.stat().st_size < 5 * 2 ** 20, path
        assert (path.parent / "README.md").is_file()


def test_prefm_checkpoint_runs_online_on_embedded_dims():
    import torch

    from models.prefm.online import OnlineParser, load_checkpoint, predict_windows

    torch.set_num_threads(1)
    model, config, meta = load_checkpoint(PREFM_CKPT)
    assert (config.audio_dim, config.visual_dim) == (AUDIO_DIM, VISUAL_DIM)
    assert config.class_names == list(LLP_CLASSES) and config.use_future and config.task == "avvp"
    assert meta["variant"] == "prefm"
    rng = np.random.default_rng(0)
    audio = rng.standard_normal((12, AUDIO_DIM)).astype(np.float32)
    visual = rng.random((12, VISUAL_DIM)).astype(np.float32)
    batch = predict_windows(model, audio, visual)
    assert batch["audio"].shape == batch["visual"].shape == batch["av"].shape == (12, 25)
    assert batch["future_audio"].shape == (12, config.Lf, 25)
    parser = OnlineParser(model)
    for t in range(12):
        step = parser.step(audio[t], visual[t])
    assert step.audio.shape == (25,) and step.future["audio"].shape == (config.Lf, 25)
    np.testing.assert_allclose(step.audio, batch["audio"][-1], atol=1e-5)
    with pytest.raises(ValueError):
        predict_windows(model, audio[:5], visual)


def test_grounder_checkpoint_grounds_embedded_features():
    import torch

    from models.trisense.features import ClipFeatures
    from models.trisense.grounder import Grounder

    torch.set_num_threads(1)
    grounder = Grounder.load(GROUNDER_CKPT)
    assert grounder.dims == {"visual": VISUAL_DIM, "audio": AUDIO_DIM, "speech": 384}
    assert not grounder.config.fixed_modality_weights
    rng = np.random.default_rng(1)
    clip = ClipFeatures(visual=rng.random((20, VISUAL_DIM)), audio=rng.standard_normal((20, AUDIO_DIM)))
    moments = grounder.ground("a phone rings", clip, top_k=3)
    assert 1 <= len(moments) <= 3
    for m in moments:
        d = m.to_dict()
        assert 0 <= d["start"] < d["end"] <= 20
        assert d["modality_weights"]["speech"] == 0.0
        assert sum(d["modality_weights"].values()) == pytest.approx(1.0, abs=1e-3)


@pytest.mark.slow
def test_shipped_models_find_the_events_of_a_new_composed_clip(tmp_path):
    """End to end on a clip never seen in training (its own seed): compose, encode, parse, ground."""
    import torch

    from models.encoders.registry import get_encoder
    from models.prefm.online import load_checkpoint, predict_windows
    from pipelines.sinks.feature_cache import encode_file
    from training.corpus.compose import compose_clip, render_clip
    from training.corpus.truth import second_labels

    torch.set_num_threads(1)
    truth = next(t for t, _ in (compose_clip(f"n{i}", "test", 977, i) for i in range(20))
                 if any(a.name == "phone" for a in t.audio) and any(a.kind == "speech" for a in t.audio))
    _, track = compose_clip(truth.clip_id, "test", 977, int(truth.clip_id[1:]))
    path = render_clip(tmp_path / "new.mp4", truth, track)
    encoder = get_encoder("embedded")
    try:
        features, _ = encode_file(path, encoder)
    finally:
        encoder.close()
    y = second_labels(truth)["audio"][: features.num_seconds]
    model, _, _ = load_checkpoint(PREFM_CKPT)
    probs = predict_windows(model, features.audio, features.visual)["audio"]
    for cls in ("Telephone_bell_ringing", "Speech"):
        k = LLP_INDEX[cls]
        on, off = probs[y[:, k] == 1, k], probs[y[:, k] == 0, k]
        assert on.mean() > off.mean() + 0.3, cls


def test_experiments_can_ship_prefm_alone_stamped_with_its_corpus(tmp_path, monkeypatch):
    """`--only ship --ship-prefm` ships PreFM from a (scripted) corpus and leaves the grounder alone."""
    import json

    import torch

    from training.corpus import experiments
    from training.corpus.compose import assign_splits, compose_clip
    from training.corpus.layout import clip_ids, write_split_files

    corpus, runs = tmp_path / "corpus_v2", tmp_path / "runs"
    n, seed = 10, 1
    truths = [compose_clip(cid, split, seed, i, scripts=0.7)[0]
              for i, (cid, split) in enumerate(zip(clip_ids(n), assign_splits(n, seed), strict=True))]
    (corpus / "truth").mkdir(parents=True)
    for t in truths:
        (corpus / "truth" / f"{t.clip_id}.json").write_text(json.dumps(t.to_dict()))
    write_split_files(corpus, truths)
    (corpus / "corpus.json").write_text(json.dumps({"seed": seed, "clips": n, "seconds": [12, 16], "scripts": 0.7}))
    (runs / "prefm").mkdir(parents=True)
    torch.save({"format": "foresight-prefm-v1", "state_dict": {"w": torch.zeros(3)}, "meta": {"variant": "prefm"}},
               runs / "prefm" / "prefm.pt")
    (runs / "prefm_test.json").write_text(json.dumps({"results": {"prefm": {"mean_evt_f1": 90.0}}}))
    shipped, grounder = tmp_path / "embedded_llp.pt", tmp_path / "embedded.pt"
    monkeypatch.setattr(experiments, "PREFM_SHIPPED", shipped)
    monkeypatch.setattr(experiments, "GROUNDER_SHIPPED", grounder)
    assert experiments.main(["--corpus", str(corpus), "--runs", str(runs), "--only", "ship", "--ship-prefm"]) == 0
    assert not grounder.exists()
    meta = torch.load(shipped, weights_only=True)["meta"]
    assert meta["variant"] == "prefm" and meta["test"] == {"mean_evt_f1": 90.0}
    stamp = meta["corpus"]
    assert (stamp["name"], stamp["seed"], stamp["clips"], stamp["scripts"]) == ("corpus_v2", 1, 10, 0.7)
    assert stamp["train_ids"] == [t.clip_id for t in truths if t.split == "train"]
