"""FANformer: the Fourier pre-projection, its attention wrappers, the PreFM / grounder switch, the direction."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from models.layers.fan import FANEncoderLayer, FANLayer, FANMultiheadAttention, make_attention, periodic_width
from models.prefm.modeling_prefm import PreFM, preset
from models.prefm.online import load_checkpoint
from models.trisense.grounder import load_checkpoint as load_grounder
from models.trisense.grounder import save_checkpoint as save_grounder
from models.trisense.modeling_trisense import TriSenseConfig, TriSenseModel
from training.methods.fanformer.toy import matched_ff, train_toy
from training.prefm.cli import train_main
from training.prefm.synthetic import generate

torch.set_num_threads(1)


def test_fan_layer_is_cos_sin_and_linear_parts_of_one_projection():
    torch.manual_seed(0)
    layer = FANLayer(64)
    assert periodic_width(64) == 8 and (layer.d_p, layer.d_g) == (8, 48)  # cos + sin = 25 % of the width
    x = torch.randn(3, 5, 64)
    out = layer(x)
    pg = layer.input_linear(x)
    assert out.shape == x.shape
    torch.testing.assert_close(out[..., :8], torch.cos(pg[..., :8]))
    torch.testing.assert_close(out[..., 8:16], torch.sin(pg[..., :8]))
    torch.testing.assert_close(out[..., 16:], pg[..., 8:])


def test_fan_attention_is_stock_attention_on_the_projected_inputs():
    torch.manual_seed(0)
    fan = FANMultiheadAttention(16, 4)
    stock = nn.MultiheadAttention(16, 4, batch_first=True)
    stock.load_state_dict({k: v for k, v in fan.state_dict().items() if not k.startswith("fan.")})
    x, y = torch.randn(2, 6, 16), torch.randn(2, 4, 16)
    torch.testing.assert_close(fan(x, y, y)[0], stock(fan.fan(x), fan.fan(y), fan.fan(y))[0])
    assert isinstance(make_attention("plain", 16, 4, 0.0), nn.MultiheadAttention)
    assert not isinstance(make_attention("plain", 16, 4, 0.0), FANMultiheadAttention)
    with pytest.raises(ValueError):
        make_attention("fourier", 16, 4, 0.0)


def test_fan_encoder_layer_keeps_the_projection_at_inference():
    # The stock layer's no-grad fast path reads the QKV weights directly; ours must not skip the FAN.
    torch.manual_seed(0)
    for norm_first in (True, False):
        layer = FANEncoderLayer(16, 4, 32, dropout=0.0, norm_first=norm_first).eval()
        x = torch.randn(2, 7, 16)
        with_grad = layer(x)
        with torch.no_grad():
            fast = layer(x)
        torch.testing.assert_close(fast, with_grad)
        if norm_first:
            h = layer.norm1(x)
            h = x + layer.self_attn(h, h, h, need_weights=False)[0]
            expected = h + layer._ff_block(layer.norm2(h))
        else:
            h = layer.norm1(x + layer.self_attn(x, x, x, need_weights=False)[0])
            expected = layer.norm2(h + layer._ff_block(h))
        torch.testing.assert_close(with_grad, expected)


def test_prefm_default_is_unchanged_and_fan_is_selectable():
    model, cfg, _ = load_checkpoint("models/prefm/checkpoints/embedded_llp.pt")  # strict load of the shipped weights
    assert cfg.attention == "plain"
    assert not any(".fan." in k for k in model.state_dict())
    plain, fan = PreFM(preset("small")), PreFM(preset("small", attention="fan"))
    assert set(plain.state_dict()) == {k for k in fan.state_dict() if ".fan." not in k}
    assert all(isinstance(layer.self_attn, FANMultiheadAttention) for layer in fan.encoder)
    assert fan.num_parameters() / plain.num_parameters() < 1.05
    out = fan.eval()(torch.randn(2, 10, 128), torch.randn(2, 10, 128))
    assert out.logits.shape == (2, 15, 2, 25) and torch.isfinite(out.logits).all()
    with pytest.raises(ValueError):
        preset("small", attention="fourier")


def test_grounder_encoder_switch(tmp_path):
    assert TriSenseConfig.from_dict({"d_model": 32}).attention == "plain"  # old checkpoints have no key
    shipped, _ = load_grounder("models/trisense/checkpoints/embedded.pt")  # strict load of the shipped weights
    assert shipped.config.attention == "plain" and not any(".fan." in k for k in shipped.state_dict())
    model = TriSenseModel(TriSenseConfig(d_model=32, ff_dim=64, attention="fan")).eval()
    assert all(isinstance(layer, FANEncoderLayer) for layer in model.encoder.layers)
    B, T = 2, 12
    feats = {"visual": torch.randn(B, T, 512), "audio": torch.randn(B, T, 128), "speech": torch.randn(B, T, 384)}
    valid = torch.ones(B, T, dtype=torch.bool)
    valid[1, 8:] = False
    with torch.no_grad():
        out = model(feats, torch.ones(B, 3, T, dtype=torch.bool), valid, torch.randn(B, 384))
    assert torch.isfinite(out.start_logits[valid]).all()
    save_grounder(tmp_path / "g.pt", model)
    again, _ = load_grounder(tmp_path / "g.pt")
    assert again.config.attention == "fan" and isinstance(again.encoder.layers[1], FANEncoderLayer)
    with pytest.raises(ValueError):
        TriSenseConfig(attention="fourier")


def test_train_prefm_attention_flag(tmp_path):
    root = generate(tmp_path / "syn", {"train": 6, "val": 2, "test": 2}, video_num=2)
    rc = train_main(["--layout", "llp", "--root", str(root), "--attention", "fan", "--epochs", "1", "--batch-size", "16",
                     "--warmup", "1", "--val-every", "1", "--quiet", "--no-distill", "--out", str(tmp_path / "runs")])
    assert rc == 0
    model, cfg, _ = load_checkpoint(tmp_path / "runs" / "prefm.pt")
    assert cfg.attention == "fan" and isinstance(model.encoder[0].cross_attn, FANMultiheadAttention)


def test_direction_fan_learns_the_periodic_signal_faster():
    plain = train_toy("plain", seed=0, steps=100, batch=16)
    fan = train_toy("fan", seed=0, steps=100, batch=16)
    assert fan.test_mse < 0.5 * plain.test_mse
    assert fan.params / plain.params < 1.1
    assert matched_ff() > 128
