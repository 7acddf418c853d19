"""Subspace Networks on Ray actors: the compressed wire is exact, small, and a post-hoc projection is not."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from training.protocol.actors import RayPipeline, ensure_ray
from training.protocol.evaluate import local_gradients, relative_error, seeded_projection
from training.protocol.model import ModelConfig, StagedModel
from training.protocol.wire import pack, unpack

CONFIG = ModelConfig(vocab=11, d=32, k=2, heads=2, layers=3, stages=3, context=8, seed=5)
B = 4


def batch(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, CONFIG.vocab, (B, CONFIG.context + 1), generator=g)
    return ids[:, :-1], ids[:, 1:]


@pytest.fixture(scope="module")
def pipe():
    import ray

    torch.set_num_threads(1)
    started = ensure_ray()
    pipeline = RayPipeline(CONFIG.stages)
    yield pipeline
    pipeline.close()
    if started:
        ray.shutdown()


def test_wire_round_trip_is_exact():
    x = torch.randn(2, 3, 4)
    ids = np.array([[1, 65535]], dtype="<u2")
    out = unpack(pack([x, ids]))
    assert torch.equal(out[0], x) and out[1].dtype == torch.int64 and out[1].tolist() == [[1, 65535]]


def test_ssn_boundaries_lie_in_the_subspace_and_full_ones_do_not():
    tokens, _ = batch(0)
    for mode, inside in (("ssn", True), ("full", False)):
        model = StagedModel(CONFIG, mode)
        model.stages[0].embed.token.weight.data.normal_()  # any weights: the invariant is structural
        x = model.stages[1](model.stages[0](tokens))
        u = StagedModel(CONFIG, "ssn").stages[0].subspace
        resid = x - u.fixed(tokens)
        off = (resid - resid @ u.basis @ u.basis.T).norm() / resid.norm()
        assert (off < 1e-5) == inside, (mode, float(off))


def test_gradients_through_compressed_actors_equal_the_uncompressed_model(pipe):
    pipe.build(CONFIG, "ssn")
    x, y = batch(1)
    loss = pipe.step(x, y, update=False)
    model = StagedModel(CONFIG, "ssn")
    model.load_state_dict(pipe.state_dict())
    reference = local_gradients(model, x, y)
    assert relative_error(pipe.gradients(), reference) < 1e-5
    with torch.no_grad():
        assert loss == pytest.approx(float(model.loss(x, y)), abs=1e-5)
    traffic = pipe.traffic()
    tokens, messages = B * CONFIG.context * (CONFIG.stages - 1), pipe.micro * (CONFIG.stages - 1)
    assert traffic.forward == tokens * (4 * CONFIG.k + 2) + messages * 25  # coords + ids + headers
    assert traffic.backward == tokens * 4 * CONFIG.k + messages * 15


def test_full_wire_carries_d_floats_and_training_lowers_the_loss(pipe):
    pipe.build(CONFIG, "full", lr=1e-2)
    x, y = batch(2)
    first = pipe.step(x, y)
    messages = pipe.micro * (CONFIG.stages - 1)
    assert pipe.traffic().forward == B * CONFIG.context * CONFIG.d * 4 * (CONFIG.stages - 1) + messages * 15
    for _ in range(15):
        last = pipe.step(x, y)
    assert last < first - 0.5
    model = StagedModel(CONFIG, "full")
    model.load_state_dict(pipe.state_dict())
    with torch.no_grad():
        exact, projected = float(model.loss(x, y)), float(model.loss(x, y, seeded_projection(CONFIG.d, CONFIG.k, 5)))
    assert projected > exact + 0.1  # squeezing a normally trained model after the fact loses information
