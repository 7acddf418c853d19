"""ARNCG: capped CG's two exits, quadratic convergence on Rosenbrock, escaping a saddle, polishing a head."""

from __future__ import annotations

import math

import torch

from training.methods.arncg import ARNCG, polish
from training.methods.arncg.capped_cg import capped_cg
from training.methods.arncg.problems import PoissonPINN, rosenbrock, rosenbrock_start

torch.set_num_threads(1)


def test_capped_cg_solves_a_convex_system_and_flags_negative_curvature():
    torch.manual_seed(0)
    a = torch.randn(8, 8, dtype=torch.float64)
    h = a @ a.T + torch.eye(8, dtype=torch.float64)
    g = torch.randn(8, dtype=torch.float64)
    rho = 1e-3
    res = capped_cg(g, rho, lambda v: h @ v, reltol=1e-6, abstol=1e-10, max_iter=50)
    assert res.kind == "SOL"
    exact = torch.linalg.solve(h + 2 * rho * torch.eye(8, dtype=torch.float64), -g)
    assert torch.allclose(res.direction, exact, atol=1e-6)
    h_bad = torch.diag(torch.tensor([3.0, 2.0, 1.0, -1.0], dtype=torch.float64))
    res = capped_cg(torch.ones(4, dtype=torch.float64), 0.1, lambda v: h_bad @ v, 0.01, 0.01, 10)
    assert res.kind == "NC"
    d = res.direction
    assert float(d @ (h_bad @ d)) < 0.1 * float(d @ d)


def test_negative_curvature_step_leaves_a_saddle():
    xy = torch.tensor([1.0, 1e-4], dtype=torch.float64, requires_grad=True)

    def f() -> torch.Tensor:
        return xy[0] ** 2 - xy[1] ** 2 + xy[1] ** 4 / 4

    opt = ARNCG([xy])
    for _ in range(60):
        opt.step(f)
    assert any(h.kind == "NC" for h in opt.history)
    xy = xy.detach()
    assert abs(abs(float(xy[1])) - math.sqrt(2)) < 1e-6 and abs(float(xy[0])) < 1e-6


def test_pinn_loss_falls_by_orders_of_magnitude():
    model = PoissonPINN(seed=0)
    start = float(model.loss().detach())
    opt = ARNCG(model.parameters())
    for _ in range(15):
        opt.step(model.loss)
    assert float(model.loss().detach()) < start / 100


def test_polish_refits_a_head_on_a_fixed_batch():
    torch.manual_seed(0)
    feats, labels = torch.randn(64, 8), torch.randint(0, 3, (64,))
    head = torch.nn.Linear(8, 3)
    loss_fn = lambda: torch.nn.functional.cross_entropy(head(feats), labels) + 1e-2 * head.weight.pow(2).sum()  # noqa: E731
    before = float(loss_fn().detach())
    history = polish(head.parameters(), loss_fn, max_steps=40, tolerance=1e-5)
    assert history[-1].grad_norm <= 1e-5
    assert float(loss_fn().detach()) < before


def test_polish_refits_a_prefm_head_and_leaves_the_rest_alone():
    from models.prefm.modeling_prefm import PreFM, preset

    torch.manual_seed(0)
    model = PreFM(preset("small", audio_dim=8, visual_dim=8, d_model=16, ff=32, layers=1, Lc=4, Lf=2,
                         dropout=0.0)).eval()
    audio, visual = torch.randn(16, 4, 8), torch.randn(16, 4, 8)
    labels = (torch.rand(16, 6, 2, 25) > 0.8).float()
    with torch.no_grad():
        feats = torch.cat([model(audio, visual).current, model(audio, visual).future], dim=1)
    frozen = {k: v.clone() for k, v in model.state_dict().items() if not k.startswith("head.")}

    def loss_fn() -> torch.Tensor:
        return torch.nn.functional.binary_cross_entropy_with_logits(model.head(feats), labels)

    before = float(loss_fn().detach())
    history = polish(model.head.parameters(), loss_fn, max_steps=30, tolerance=1e-6)
    assert float(loss_fn().detach()) < before and history[-1].grad_norm < 1e-4
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in frozen.items())


def test_oracle_calls_count_every_gradient_hvp_and_line_search_evaluation():
    x = rosenbrock_start(6).requires_grad_(True)
    calls = {"n": 0}

    def f() -> torch.Tensor:
        calls["n"] += 1
        return rosenbrock(x)

    opt = ARNCG([x])
    for _ in range(5):
        opt.step(f)
    counted = opt.oracle_calls
    assert counted["gradient"] == 5 and counted["gradient"] + counted["function"] == calls["n"]
    assert counted["hvp"] >= sum(h.cg_iterations for h in opt.history) > 0
