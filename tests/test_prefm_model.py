"""PreFM network, live/batch inference equivalence, events and checkpoints."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from models.prefm.labels import LLP_CLASSES, llp_multi_hot
from models.prefm.modeling_prefm import PreFM, PreFMConfig, clap_window_pooling, preset
from models.prefm.online import (
    EventMerger,
    OnlineParser,
    load_checkpoint,
    merge_events,
    predict_offline,
    predict_windows,
    save_checkpoint,
)

torch.set_num_threads(1)


def tiny(**kw):
    base = dict(audio_dim=12, visual_dim=10, num_classes=6, d_model=16, ff=32, layers=2, heads=4, Lc=10, Lf=5)
    return PreFMConfig(**{**base, **kw})


def test_paper_sizes_match_the_authors_parameter_counts():
    # 3.08 M / 11.50 M inference parameters, 3.27 M / 12.29 M with the teacher projection.
    avvp, avel = PreFM(preset("paper_avvp")), PreFM(preset("paper_avel"))
    assert round(avvp.num_parameters() / 1e6, 2) == 3.08
    assert round(avvp.num_parameters(inference_only=False) / 1e6, 2) == 3.27
    assert round(avel.num_parameters() / 1e6, 2) == 11.50
    assert round(avel.num_parameters(inference_only=False) / 1e6, 2) == 12.29


def test_output_shapes_avvp_avel_and_ablation():
    torch.manual_seed(0)
    m = PreFM(tiny(st_dim=7)).eval()
    out = m(torch.randn(3, 10, 12), torch.randn(3, 10, 10), torch.randn(3, 10, 7))
    assert out.logits.shape == (3, 15, 2, 6) and out.current.shape == (3, 10, 2, 16)
    assert out.future.shape == (3, 5, 2, 16)
    m = PreFM(tiny(task="avel")).eval()
    out = m(torch.randn(2, 10, 12), torch.randn(2, 10, 10))
    assert out.logits.shape == (2, 15, 6) and out.current.shape == (2, 10, 32)
    m = PreFM(tiny(use_future=False)).eval()
    out = m(torch.randn(2, 10, 12), torch.randn(2, 10, 10))
    assert out.logits.shape == (2, 10, 2, 6) and out.future is None
    assert not any(n.startswith("future_") for n, _ in m.named_parameters())


def test_encoder_layers_are_shared_between_modalities():
    m = PreFM(tiny())
    # one HAN layer per depth (applied to audio then visual), not one per modality
    assert len(m.encoder) == 2
    assert m.future_a.queries.shape == (1, 5, 16)


def test_clap_pooling_equals_upsample_then_linear_path():
    torch.manual_seed(0)
    fc = torch.nn.Linear(8, 4)
    x = torch.randn(2, 64, 8)
    # Reference order: reshape to a 2 x 32 grid, bicubic to 2 x 1024, fc, mean of rows, pool to 10.
    grid = x.permute(0, 2, 1).reshape(2, 8, 2, 32)
    up = F.interpolate(grid, size=(2, 1024), mode="bicubic", align_corners=False)
    ref = fc(up.permute(0, 2, 3, 1)).permute(0, 3, 1, 2).mean(dim=2)
    ref = F.adaptive_avg_pool1d(ref, 10).permute(0, 2, 1)
    ours = fc(torch.einsum("sf,bfd->bsd", clap_window_pooling(), x))
    torch.testing.assert_close(ours, ref, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("kind", ["avvp_st_1fps", "avel_clap", "avvp_positional"])
def test_ring_buffer_matches_batch_windows(kind):
    torch.manual_seed(1)
    rng = np.random.default_rng(0)
    seconds = 23
    if kind.startswith("avvp"):
        cfg = tiny(st_dim=7, class_names=[f"c{i}" for i in range(6)], positional=kind == "avvp_positional")
        audio = rng.standard_normal((seconds, 12)).astype(np.float32)
        st = rng.standard_normal((seconds, 7)).astype(np.float32)
    else:
        cfg = tiny(task="avel", audio_rate="clap_maps")
        audio = rng.standard_normal((int(seconds * 6.4) + 3, 12)).astype(np.float32)
        st = None
    visual = rng.standard_normal((seconds, 10)).astype(np.float32)
    model = PreFM(cfg).eval()
    batch = predict_windows(model, audio, visual, st, batch_size=7)
    parser = OnlineParser(model)
    for t in range(seconds):
        a = audio[int(t * 6.4): int((t + 1) * 6.4)] if cfg.audio_rate == "clap_maps" else audio[t]
        r = parser.step(a, visual[t], None if st is None else st[t])
        np.testing.assert_allclose(r.av, batch["av"][t], atol=1e-5)
        np.testing.assert_allclose(r.future["av"], batch["future_av"][t], atol=1e-5)
        if cfg.task == "avvp":
            np.testing.assert_allclose(r.audio, batch["audio"][t], atol=1e-5)
            np.testing.assert_allclose(r.visual, batch["visual"][t], atol=1e-5)
    assert batch["av"].shape == (seconds, 6) and batch["future_av"].shape == (seconds, 5, 6)


def test_recency_encoding_lets_the_window_tell_now_from_before():
    """Without encodings (the paper) the newest output ignores the order of older seconds; with them it does not."""
    torch.manual_seed(3)
    x_a, x_v = torch.randn(1, 10, 16), torch.randn(1, 10, 16)
    swap = torch.tensor([1, 0, 2, 3, 4, 5, 6, 7, 8, 9])  # reorder the two oldest seconds
    for positional, same in ((False, True), (True, False)):
        model = PreFM(tiny(positional=positional)).eval()
        now = model.forward_tokens(x_a, x_v).logits[0, 9]
        now_swapped = model.forward_tokens(x_a[:, swap], x_v[:, swap]).logits[0, 9]
        assert torch.allclose(now, now_swapped, atol=1e-5) is same
    assert PreFMConfig.from_dict(tiny(positional=True).to_dict()).positional is True


def test_online_predictions_never_look_ahead():
    torch.manual_seed(2)
    rng = np.random.default_rng(1)
    model = PreFM(tiny()).eval()
    a, v = rng.standard_normal((20, 12)).astype(np.float32), rng.standard_normal((20, 10)).astype(np.float32)
    before = predict_windows(model, a, v)
    a2, v2 = a.copy(), v.copy()
    a2[12:] += 5.0
    v2[12:] -= 5.0
    after = predict_windows(model, a2, v2)
    np.testing.assert_array_equal(before["audio"][:12], after["audio"][:12])
    assert not np.allclose(before["audio"][12:], after["audio"][12:])


def test_offline_sees_the_future_and_needs_no_future_head():
    torch.manual_seed(3)
    rng = np.random.default_rng(2)
    model = PreFM(tiny(use_future=False)).eval()
    a, v = rng.standard_normal((15, 12)).astype(np.float32), rng.standard_normal((15, 10)).astype(np.float32)
    p = predict_offline(model, a, v)
    a2 = a.copy()
    a2[-1] += 5.0
    assert not np.allclose(p["audio"][0], predict_offline(model, a2, v)["audio"][0])
    with pytest.raises(ValueError, match="use_future=False"):
        predict_offline(PreFM(tiny()), a, v)


def test_event_merger_is_causal_and_exclusive():
    names = ["Dog", "Car"]
    merger = EventMerger(names)
    seq_a = [[0.9, 0.1], [0.9, 0.1], [0.2, 0.1], [0.1, 0.7]]
    seq_v = [[0.8, 0.1], [0.1, 0.1], [0.1, 0.1], [0.1, 0.1]]
    emitted = []
    for t in range(4):
        pa, pv = np.array(seq_a[t]), np.array(seq_v[t])
        out = merger.update(t, {"audio": pa, "visual": pv, "av": np.sqrt(pa * pv)})
        emitted.append(out)
    # second 0 Dog heard and seen -> audio-visual [0,1); seconds 1 Dog heard only -> audio [1,2)
    assert emitted[0] == []
    assert [(e["label"], e["modality"], e["start"], e["end"]) for e in emitted[1]] == [("Dog", "audio-visual", 0.0, 1.0)]
    assert [(e["label"], e["modality"], e["start"], e["end"]) for e in emitted[2]] == [("Dog", "audio", 1.0, 2.0)]
    tail = merger.flush()
    assert [(e["label"], e["modality"], e["start"], e["end"]) for e in tail] == [("Car", "audio", 3.0, 4.0)]
    assert tail[0]["confidence"] == pytest.approx(0.7)


def test_merge_events_streams_mode_and_avel():
    probs = {"av": np.array([[0.8], [0.9], [0.1]])}
    ev = merge_events(probs, ["Dog"])
    assert ev == [{"label": "Dog", "modality": "audio-visual", "start": 0.0, "end": 2.0, "confidence": 0.85}]
    pa, pv = np.array([[0.9], [0.9]]), np.array([[0.9], [0.1]])
    ev = merge_events({"audio": pa, "visual": pv, "av": np.sqrt(pa * pv)}, ["Dog"], exclusive=False)
    assert sorted((e["modality"], e["end"]) for e in ev) == [("audio", 2.0), ("audio-visual", 1.0), ("visual", 1.0)]


def test_checkpoint_roundtrip_weights_only(tmp_path):
    torch.manual_seed(4)
    cfg = tiny(teacher_dim=9, class_names=list(LLP_CLASSES[:6]))
    model = PreFM(cfg).eval()
    path = save_checkpoint(tmp_path / "m.pt", model, cfg, {"variant": "prefm", "val": {"mean_evt_f1": 12.5}})
    payload = torch.load(path, weights_only=True)
    assert payload["config"]["teacher_dim"] == 9
    loaded, cfg2, meta = load_checkpoint(path)
    assert cfg2 == cfg and meta["val"]["mean_evt_f1"] == 12.5
    x = (torch.randn(1, 10, 12), torch.randn(1, 10, 10))
    torch.testing.assert_close(loaded(*x).logits, model(*x).logits)
    with pytest.raises(FileNotFoundError):
        load_checkpoint(tmp_path / "missing.pt")
    (tmp_path / "bad.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError):
        load_checkpoint(tmp_path / "bad.pt")


def test_config_and_input_validation():
    with pytest.raises(ValueError):
        PreFMConfig(task="x")
    with pytest.raises(ValueError):
        PreFMConfig(d_model=30, heads=4)
    with pytest.raises(ValueError):
        preset("huge")
    parser = OnlineParser(PreFM(tiny()))
    with pytest.raises(ValueError):
        parser.step(np.zeros(5), np.zeros(10))
    assert llp_multi_hot("Speech,Dog")[[0, 3]].tolist() == [1.0, 1.0]
    with pytest.raises(ValueError):
        llp_multi_hot(["Unicorn"])
