"""TriSense-lite model: connector masking, shapes, decoding, learning a toy task, checkpoints, Grounder."""

import numpy as np
import pytest
import torch

from models.trisense.features import ClipFeatures, batch_features
from models.trisense.grounder import Grounder, load_checkpoint, save_checkpoint
from models.trisense.modeling_trisense import (
    QueryConnector,
    TriSenseConfig,
    TriSenseModel,
    decode_spans,
    grounding_loss,
)

torch.set_num_threads(1)
DIMS = {"visual": 8, "audio": 6, "speech": 5}


def tiny_config(**kw) -> TriSenseConfig:
    base = dict(visual_dim=8, audio_dim=6, speech_dim=5, query_dim=16, d_model=32, n_heads=2, n_layers=1,
                ff_dim=64, dropout=0.0, coarse_dim=8, max_window_s=40, max_span_s=20)
    base.update(kw)
    return TriSenseConfig(**base)


def random_clip(rng, T=30, audio=True, speech=True):
    return ClipFeatures(
        visual=rng.standard_normal((T, 8)).astype(np.float32),
        audio=rng.standard_normal((T, 6)).astype(np.float32) if audio else None,
        speech=rng.standard_normal((T, 5)).astype(np.float32) if speech else None,
    )


def test_connector_masks_missing_modalities_before_softmax():
    torch.manual_seed(0)
    conn = QueryConnector(16)
    q = torch.randn(2, 16)
    xs = torch.randn(2, 3, 10, 16)
    masks = torch.ones(2, 3, 10, dtype=torch.bool)
    masks[0, 1] = False  # sample 0: no audio at all
    masks[1, 2, :5] = False  # sample 1: speech only in the second half
    with torch.no_grad():
        fused, clip_w, step_w = conn(q, xs, masks)
    assert fused.shape == (2, 10, 16)
    assert clip_w[0, 1] == 0.0 and clip_w[0].sum() == pytest.approx(1.0)
    assert (clip_w[1] > 0).all()
    assert torch.allclose(step_w.sum(-1), torch.ones(2, 10))
    assert (step_w[1, :5, 2] == 0).all() and (step_w[1, 5:, 2] > 0).all()
    # fused is exactly the per-second weighted sum
    expect = torch.einsum("tm,mtd->td", step_w[0], xs[0])
    assert torch.allclose(fused[0], expect, atol=1e-6)


def test_connector_weights_depend_on_query_and_fixed_mode_is_equal():
    torch.manual_seed(0)
    conn = QueryConnector(16)
    xs = torch.randn(1, 3, 10, 16)
    masks = torch.ones(1, 3, 10, dtype=torch.bool)
    _, w1, _ = conn(torch.randn(1, 16), xs, masks)
    _, w2, _ = conn(torch.randn(1, 16), xs, masks)
    assert not torch.allclose(w1, w2)
    fixed = QueryConnector(16, fixed=True)
    masks[0, 1] = False
    _, w, _ = fixed(torch.randn(1, 16), xs, masks)
    assert torch.allclose(w, torch.tensor([[0.5, 0.0, 0.5]]))


def test_forward_shapes_and_decoded_spans():
    rng = np.random.default_rng(0)
    model = TriSenseModel(tiny_config()).eval()
    clips = [random_clip(rng, 30), random_clip(rng, 20, audio=False)]
    feats, masks, valid = batch_features(clips, DIMS)
    out = model(feats, masks, valid, torch.randn(2, 16))
    assert out.start_logits.shape == (2, 30) and out.step_weights.shape == (2, 30, 3)
    assert out.modality_weights[1, 1] == 0.0
    spans = decode_spans(out, top_k=3, max_span_s=20)
    for b, n in enumerate((30, 20)):
        assert 1 <= len(spans[b]) <= 3
        scores = [s.score for s in spans[b]]
        assert scores == sorted(scores, reverse=True)
        for s in spans[b]:
            assert 0 <= s.start < s.end <= n and s.end - s.start <= 20
            assert sum(s.weights) == pytest.approx(1.0, abs=1e-5)
        if b == 1:
            assert all(s.weights[1] == 0.0 for s in spans[b])


def test_modality_dropout_only_in_training_and_keeps_one():
    torch.manual_seed(0)
    model = TriSenseModel(tiny_config(modality_dropout=1.0))
    masks = torch.ones(64, 3, 5, dtype=torch.bool)
    model.train()
    dropped = model.drop_modalities(masks)
    present = dropped.any(-1)
    assert (present.sum(-1) >= 1).all() and (present.sum(-1) < 3).all()
    model.eval()
    assert torch.equal(model.drop_modalities(masks), masks)


def toy_batch(rng, protos, queries, B=16, T=30):
    """Clips with a visual and an audio event; half the queries ask for each."""
    clips, spans, qs = [], [], []
    for _ in range(B):
        v = rng.standard_normal((T, 8)).astype(np.float32) * 0.5
        a = rng.standard_normal((T, 6)).astype(np.float32) * 0.5
        sv, sa = int(rng.integers(0, 12)), int(rng.integers(16, 26))
        if rng.random() < 0.5:
            sv, sa = sv + 16, sa - 16
        v[sv : sv + 4] += protos["visual"]
        a[sa : sa + 4] += protos["audio"]
        kind = "visual" if rng.random() < 0.5 else "audio"
        spans.append((float(sv if kind == "visual" else sa), float((sv if kind == "visual" else sa) + 4)))
        qs.append(queries[kind])
        clips.append(ClipFeatures(visual=v, audio=a))
    return clips, torch.tensor(spans), torch.from_numpy(np.stack(qs))


def test_model_learns_toy_grounding_task():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    protos = {"visual": 3 * rng.standard_normal(8).astype(np.float32),
              "audio": 3 * rng.standard_normal(6).astype(np.float32)}
    queries = {"visual": rng.standard_normal(16).astype(np.float32),
               "audio": rng.standard_normal(16).astype(np.float32)}
    model = TriSenseModel(tiny_config(modality_dropout=0.0))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    first = None
    for _ in range(250):
        clips, spans, q = toy_batch(rng, protos, queries)
        out = model(*batch_features(clips, DIMS), q)
        loss = grounding_loss(out, spans)["total"]
        first = first if first is not None else float(loss.detach())
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert float(loss.detach()) < 0.6 * first
    model.eval()
    clips, spans, q = toy_batch(rng, protos, queries, B=40)
    with torch.no_grad():
        out = model(*batch_features(clips, DIMS), q)
    preds = decode_spans(out, top_k=1)
    hits = sum(abs(p[0].start - s[0]) <= 1 and abs(p[0].end - s[1]) <= 1 for p, s in zip(preds, spans.tolist(), strict=True))
    assert hits >= 32
    # the connector learned to favour the queried modality
    vis_q = [i for i in range(40) if torch.equal(q[i], torch.from_numpy(queries["visual"]))]
    aud_q = [i for i in range(40) if i not in vis_q]
    assert out.modality_weights[vis_q, 0].mean() > out.modality_weights[aud_q, 0].mean()


def test_checkpoint_roundtrip_weights_only(tmp_path):
    torch.manual_seed(0)
    model = TriSenseModel(tiny_config()).eval()
    path = tmp_path / "g.pt"
    save_checkpoint(path, model, {"note": "x"})
    blob = torch.load(path, weights_only=True)
    assert blob["config"]["visual_dim"] == 8
    loaded, meta = load_checkpoint(path)
    assert meta == {"note": "x"}
    rng = np.random.default_rng(1)
    inputs = batch_features([random_clip(rng)], DIMS)
    q = torch.randn(1, 16)
    with torch.no_grad():
        assert torch.allclose(model(*inputs, q).start_logits, loaded(*inputs, q).start_logits)


def test_checkpoint_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_checkpoint(tmp_path / "missing.pt")
    bad = tmp_path / "bad.pt"
    torch.save({"something": 1}, bad)
    with pytest.raises(ValueError):
        load_checkpoint(bad)
    junk = tmp_path / "junk.pt"
    junk.write_text("not a checkpoint")
    with pytest.raises(ValueError):
        load_checkpoint(junk)


def test_grounder_windows_cover_long_clips():
    g = Grounder(TriSenseModel(tiny_config(max_window_s=40)))
    assert g.windows(30) == [(0, 30)]
    wins = g.windows(100)
    assert wins[0][0] == 0 and wins[-1][1] == 100
    assert all(e - s == 40 for s, e in wins)
    assert all(b[0] < a[1] for a, b in zip(wins, wins[1:], strict=False))  # overlapping, no gaps


def test_grounder_ground_returns_schema_moments_with_real_minilm():
    torch.manual_seed(0)
    rng = np.random.default_rng(2)
    cfg = tiny_config(query_dim=384, speech_dim=384, max_window_s=40)
    g = Grounder(TriSenseModel(cfg))
    clip = ClipFeatures(visual=rng.standard_normal((95, 8)).astype(np.float32),
                        speech=rng.standard_normal((95, 384)).astype(np.float32))
    moments = g.ground("someone asks for a password", clip, top_k=4)
    assert 1 <= len(moments) <= 4
    for m in moments:
        d = m.to_dict()
        assert set(d) == {"query", "start", "end", "score", "modality_weights"}
        assert set(d["modality_weights"]) == {"visual", "audio", "speech"}
        assert d["modality_weights"]["audio"] == 0.0
        assert 0 <= d["start"] < d["end"] <= 95
    assert [m.score for m in moments] == sorted((m.score for m in moments), reverse=True)
    with pytest.raises(ValueError):
        g.ground("   ", clip)
    with pytest.raises(ValueError):
        g.ground("x", clip, top_k=0)
