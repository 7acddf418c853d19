"""Capped conjugate gradient with a negative-curvature monitor (Royer, O'Neill and Wright 2020 style).

ARNCG solves the regularized Newton system (H + 2 rho I) d = -g only approximately. Plain CG breaks
down on a nonconvex problem, so this CG watches the curvature it sees: whenever an iterate y or a
search direction p has curvature below rho (`v' (H + 2 rho I) v < rho |v|^2`) it stops and hands that
vector back as a negative-curvature (NC) direction. It also keeps a running estimate U of |H| from
the Hessian-vector products it already has, and from it a bound on how fast the residual must shrink;
a residual that shrinks too slowly proves that some difference of iterates has low curvature, which
a second, recomputing CG pass finds. Only Hessian-vector products are used (one per iteration).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

Hvp = Callable[[torch.Tensor], torch.Tensor]


@dataclass
class CGResult:
    """kind: "SOL" (approximate solution), "NC" (negative-curvature direction) or "ERR" (none found)."""

    direction: torch.Tensor
    kind: str
    iterations: int
    residual: float


def _curvature_low(v: torch.Tensor, hv: torch.Tensor, rho: float) -> bool:
    """v' (H + 2 rho I) v < rho |v|^2."""
    vv = float(v @ v)
    return vv > 0 and float(v @ (hv + 2 * rho * v)) < rho * vv


class _CGState:
    """One CG run on H + 2 rho I from y = 0, r = g, p = -r, keeping H y, H r and H p by recurrence."""

    def __init__(self, g: torch.Tensor, rho: float, hvp: Hvp) -> None:
        self.rho, self.hvp = rho, hvp
        self.y = torch.zeros_like(g)
        self.hy = torch.zeros_like(g)
        self.r = g.clone()
        self.hr = hvp(self.r)
        self.p = -self.r
        self.hp = -self.hr
        self.rr = float(self.r @ self.r)
        self._refresh()

    def _refresh(self) -> None:
        self.bar_hp = self.hp + 2 * self.rho * self.p
        self.p_bar_p = float(self.p @ self.bar_hp)

    def advance(self) -> None:
        alpha = self.rr / self.p_bar_p
        self.y = self.y + alpha * self.p
        self.hy = self.hy + alpha * self.hp
        self.r = self.r + alpha * self.bar_hp
        self.hr = self.hvp(self.r)
        rr_new = float(self.r @ self.r)
        beta = rr_new / self.rr
        self.rr = rr_new
        self.p = beta * self.p - self.r
        self.hp = beta * self.hp - self.hr
        self._refresh()

    def next_iterate(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The iterate (and its H product) one CG step ahead, without moving."""
        alpha = self.rr / self.p_bar_p
        return self.y + alpha * self.p, self.hy + alpha * self.hp


def _norm_ratio(hv: torch.Tensor, v: torch.Tensor) -> float:
    n = float(v.norm())
    return float(hv.norm()) / n if n > 0 else 0.0


def capped_cg(g: torch.Tensor, rho: float, hvp: Hvp, reltol: float, abstol: float,
              max_iter: int) -> CGResult:
    """Approximately solve (H + 2 rho I) d = -g, or return a direction of curvature below rho."""
    if rho <= 0:
        raise ValueError("capped CG needs rho > 0")
    s = _CGState(g, rho, hvp)
    r0 = math.sqrt(s.rr)
    big_u = 0.0
    for it in range(max_iter + 1):
        if it > 0:
            s.advance()
        big_u = max(big_u, _norm_ratio(s.hp, s.p), _norm_ratio(s.hr, s.r), _norm_ratio(s.hy, s.y))
        kappa = (big_u + 2 * rho) / rho
        tau = math.sqrt(kappa) / (math.sqrt(kappa) + 1)
        t_bound = 4 * kappa**4 / (1 - math.sqrt(kappa)) ** 2
        xi_hat = reltol / (3 * kappa)
        rnorm = math.sqrt(s.rr)
        if _curvature_low(s.y, s.hy, rho):
            return CGResult(s.y, "NC", it, rnorm)
        if rnorm < xi_hat * r0 and rnorm < abstol:
            return CGResult(s.y, "SOL", it, rnorm)
        if s.p_bar_p < rho * float(s.p @ s.p):
            return CGResult(s.p, "NC", it, rnorm)
        if rnorm > math.sqrt(t_bound) * tau ** (it / 2) * r0:
            return _difference_direction(g, rho, hvp, s, it, rnorm)
    return CGResult(s.y, "SOL", max_iter, math.sqrt(s.rr))


def _difference_direction(g: torch.Tensor, rho: float, hvp: Hvp, s: _CGState, it: int,
                          rnorm: float) -> CGResult:
    """Residual decayed too slowly: some y_extra - y_i has curvature below rho; rerun CG to find it."""
    y_extra, hy_extra = s.next_iterate()
    again = _CGState(g, rho, hvp)
    for i in range(it + 1):
        if i > 0:
            again.advance()
        diff = y_extra - again.y
        if _curvature_low(diff, hy_extra - again.hy, rho):
            return CGResult(diff, "NC", it, rnorm)
    return CGResult(s.y, "ERR", it, rnorm)
