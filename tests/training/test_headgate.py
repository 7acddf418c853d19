"""Causal head gating: gates are exact and leave no trace, planted roles are found on PreFM and the
grounder, the contrastive mask forgets what it is told to, and the head-report command works."""

from __future__ import annotations

import itertools
import json

import pytest
import torch

from models.prefm.modeling_prefm import PreFM, preset
from models.prefm.online import save_checkpoint
from models.trisense.modeling_trisense import TriSenseConfig, TriSenseModel
from training.methods.headgate.chg import (
    CHGConfig,
    causal_head_gating,
    classify,
    contrastive_head_gating,
    mean_loss,
    module_names,
)
from training.methods.headgate.gates import HeadGates, ablation_gates, attention_modules
from training.methods.headgate.report import main as report_main
from training.methods.headgate.substrate import PlantedHead, plant

torch.set_num_threads(1)


def tiny_prefm(seed: int = 0) -> PreFM:
    torch.manual_seed(seed)
    cfg = preset("small", audio_dim=8, visual_dim=8, d_model=16, ff=32, layers=1, heads=4, Lc=4, Lf=2,
                 dropout=0.0)
    return PreFM(cfg).eval()


def tiny_grounder(seed: int = 0) -> TriSenseModel:
    torch.manual_seed(seed)
    cfg = TriSenseConfig(visual_dim=8, audio_dim=6, speech_dim=5, query_dim=7, d_model=16, n_heads=4, n_layers=2,
                         ff_dim=32, dropout=0.0, coarse_dim=8, max_window_s=16)
    return TriSenseModel(cfg).eval()


def prefm_batch(n: int = 16, seed: int = 0) -> dict:
    g = torch.Generator().manual_seed(seed)
    return {"audio": torch.randn(n, 4, 8, generator=g), "visual": torch.randn(n, 4, 8, generator=g)}


def grounder_batch(n: int = 8, seed: int = 0) -> dict:
    g = torch.Generator().manual_seed(seed)
    feats = {"visual": torch.randn(n, 12, 8, generator=g), "audio": torch.randn(n, 12, 6, generator=g),
             "speech": torch.randn(n, 12, 5, generator=g)}
    return {"feats": feats, "masks": torch.ones(n, 3, 12, dtype=torch.bool), "valid": torch.ones(n, 12, dtype=torch.bool),
            "query": torch.randn(n, 7, generator=g)}


def prefm_out(model, b):
    return model(b["audio"], b["visual"]).logits


def grounder_out(model, b):
    return model(b["feats"], b["masks"], b["valid"], b["query"]).start_logits


@pytest.mark.parametrize("make,batch,out", [(tiny_prefm, prefm_batch, prefm_out),
                                            (tiny_grounder, grounder_batch, grounder_out)])
def test_gates_are_exact_and_leave_no_trace(make, batch, out):
    model, b = make(), batch()
    names = module_names(model)
    order = [k for k, _ in model.named_parameters()]
    state = {k: v.clone() for k, v in model.state_dict().items()}
    with torch.no_grad():
        ref = out(model, b)
        with HeadGates(model, torch.ones(len(names), 4)):
            assert torch.allclose(out(model, b), ref, atol=1e-6)
        with HeadGates(model, ablation_gates((len(names), 4), [(0, 2)])):
            gated = out(model, b)
        w = dict(attention_modules(model))[names[0]].out_proj.weight
        saved = w.clone()
        w[:, 8:12] = 0.0  # head 2 of 4 at d_model 16
        zeroed = out(model, b)
        w.copy_(saved)
    assert torch.allclose(gated, zeroed, atol=1e-5) and not torch.allclose(gated, ref)
    assert [k for k, _ in model.named_parameters()] == order
    assert all(torch.equal(state[k], v) for k, v in model.state_dict().items())
    logits = torch.zeros(len(names), 4, requires_grad=True)
    with HeadGates(model, lambda: logits.sigmoid()):
        out(model, b).pow(2).sum().backward()
    assert logits.grad is not None and logits.grad.abs().sum() > 0
    with pytest.raises(ValueError):
        HeadGates(model, torch.ones(len(names), 3))


def test_classify_follows_the_three_stage_reading():
    g_plus = torch.tensor([[0.99, 0.02, 0.97]])
    g_minus = torch.tensor([[0.95, 0.01, 0.03]])
    assert classify(g_plus, g_minus) == [["facilitating", "interfering", "irrelevant"]]


def _fidelity_loss(out, reference):
    """Per-sample squared error to the model's outputs before planting: a head that injects noise
    interferes, a head whose output is discarded is irrelevant."""
    return lambda model, b: (out(model, b) - reference[id(b)]).pow(2).flatten(1).mean(-1) * 10.0


@pytest.mark.parametrize("make,batch,out,irrelevant,interfering", [
    (tiny_prefm, prefm_batch, prefm_out, ("encoder.0.cross_attn", 1), ("fuse_current_a.self_attn", 3)),
    (tiny_grounder, grounder_batch, grounder_out, ("encoder.layers.0.self_attn", 0),
     ("encoder.layers.1.self_attn", 2)),
])
def test_planted_heads_are_found(make, batch, out, irrelevant, interfering):
    model = make()
    batches = [batch(seed=s) for s in range(4)]
    with torch.no_grad():
        reference = {id(b): out(model, b) for b in batches}
    plant(model, [PlantedHead(*irrelevant, "irrelevant"), PlantedHead(*interfering, "interfering")], seed=0)
    cycle = itertools.cycle(batches)
    report = causal_head_gating(model, lambda: next(cycle), _fidelity_loss(out, reference), CHGConfig(steps=40))
    names = report.modules
    assert report.roles[names.index(irrelevant[0])][irrelevant[1]] == "irrelevant"
    assert report.roles[names.index(interfering[0])][interfering[1]] == "interfering"
    assert not any(p.requires_grad is False for p in model.parameters())  # unfrozen afterwards


def test_contrastive_mask_forgets_the_negative_behaviour():
    model = tiny_prefm(1)
    batches = [prefm_batch(seed=s) for s in range(4)]
    with torch.no_grad():
        reference = {id(b): prefm_out(model, b) for b in batches}

    def part(sl):
        return lambda m, b: (prefm_out(m, b)[:, sl] - reference[id(b)][:, sl]).pow(2).flatten(1).mean(-1) * 10.0

    keep, forget = part(slice(0, 4)), part(slice(4, 6))
    cycle = itertools.cycle(batches)
    mask = contrastive_head_gating(model, lambda: (lambda b: (b, b))(next(cycle)), keep, forget,
                                   CHGConfig(steps=40))
    hard = (mask >= 0.5).float()
    assert mean_loss(model, batches, forget, hard) > 5 * max(mean_loss(model, batches, keep, hard), 1e-3)


def test_head_report_command_on_a_prefm_checkpoint(tmp_path, capsys):
    from training.prefm.synthetic import generate

    root = generate(tmp_path / "llp", {"val": 6}, audio_dim=8, visual_dim=8, seed=0)
    model = tiny_prefm()
    ckpt = save_checkpoint(tmp_path / "prefm.pt", model, model.config)
    out = tmp_path / "report.json"
    code = report_main([str(ckpt), "--root", str(root), "--layout", "llp", "--split", "val", "--steps", "5",
                        "--contrastive", "current:future", "--out", str(out)])
    assert code == 0
    doc = json.loads(out.read_text())
    assert doc["kind"] == "prefm" and len(doc["heads"]) == 4 * len(module_names(model))
    assert sum(doc["counts"].values()) == len(doc["heads"]) and "dropped" in doc["contrastive"]
    assert report_main([str(ckpt)]) == 2  # PreFM needs --root
    assert report_main([str(tmp_path / "missing.pt")]) == 2
    assert "error" in capsys.readouterr().err
