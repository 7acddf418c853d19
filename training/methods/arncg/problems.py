"""The two test problems of the miniature: chained Rosenbrock and a tiny physics-informed net.

Rosenbrock is the classic nonconvex valley where first-order methods crawl and a Newton method with
the right regularization converges quadratically at the end. The PINN solves the 1-D Poisson problem
u'' = -pi^2 sin(pi x) on [0, 1] with u(0) = u(1) = 0 (solution sin(pi x)): its loss involves second
derivatives of the network, is smooth and deterministic, and is known to be ill-conditioned, which
is where the paper reports second-order methods pay off.
"""

from __future__ import annotations

import math

import torch
from torch import nn


def rosenbrock(x: torch.Tensor) -> torch.Tensor:
    """Chained Rosenbrock: sum_i 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2; minimum 0 at all ones."""
    return (100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2).sum()


def rosenbrock_start(n: int = 20) -> torch.Tensor:
    """The usual start (-1.2, 1, -1.2, 1, ...) in float64."""
    return torch.tensor([-1.2 if i % 2 == 0 else 1.0 for i in range(n)], dtype=torch.float64)


class PoissonPINN(nn.Module):
    """An MLP u(x) (tanh, float64) and the physics-informed loss of the Poisson problem."""

    def __init__(self, hidden: int = 16, depth: int = 2, points: int = 44, boundary_weight: float = 10.0,
                 seed: int = 0) -> None:
        super().__init__()
        torch.manual_seed(seed)
        layers: list[nn.Module] = []
        width = 1
        for _ in range(depth):
            layers += [nn.Linear(width, hidden), nn.Tanh()]
            width = hidden
        layers.append(nn.Linear(width, 1))
        self.net = nn.Sequential(*layers).double()
        self.register_buffer("x", torch.linspace(0, 1, points + 2, dtype=torch.float64)[1:-1, None])
        self.register_buffer("xb", torch.tensor([[0.0], [1.0]], dtype=torch.float64))
        self.boundary_weight = boundary_weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def loss(self) -> torch.Tensor:
        """mean (u'' + pi^2 sin(pi x))^2 over collocation points + w * mean u(boundary)^2."""
        x = self.x.clone().requires_grad_(True)
        u = self.net(x)
        du = torch.autograd.grad(u.sum(), x, create_graph=True)[0]
        d2u = torch.autograd.grad(du.sum(), x, create_graph=True)[0]
        residual = d2u + math.pi**2 * torch.sin(math.pi * x)
        return residual.pow(2).mean() + self.boundary_weight * self.net(self.xb).pow(2).mean()

    @torch.no_grad()
    def relative_l2(self, points: int = 201) -> float:
        """|u - sin(pi x)| / |sin(pi x)| on a fine grid."""
        x = torch.linspace(0, 1, points, dtype=torch.float64)[:, None]
        exact = torch.sin(math.pi * x)
        return float((self.net(x) - exact).norm() / exact.norm())
