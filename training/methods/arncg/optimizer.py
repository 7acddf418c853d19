"""ARNCG: adaptive regularized Newton-CG as a `torch.optim` optimizer (Zhou et al., NeurIPS 2025).

One `step(closure)` is one outer iteration of the method:

1. gradient g at x (with a graph, so Hessian-vector products come from double backward);
2. regularizer omega from the gradient alone: omega_f = |g|^(1/2) (or eps_k^(1/2), eps_k the smallest
   gradient norm so far), shrunk by (|g_k| / |g_{k-1}|)^theta for the trial step; theta >= 1 gives
   quadratic local convergence, theta = 0 the classical |g|^(1/2) regularization;
3. capped CG on (H + 2 sqrt(M) omega I) d = -g, which returns a solution (SOL) or a direction of
   negative curvature (NC);
4. backtracking line search (Armijo for SOL, a cubic decrease test for NC), with a second, shorter
   search for long SOL steps; a failed search rejects the step;
5. M, the running estimate of the Hessian's Lipschitz constant, grows by gamma when the decrease was
   smaller than the model predicts and shrinks by gamma when it was much larger. Nothing has to be
   tuned: there is no learning rate, and the Lipschitz constant is never needed.

The closure must re-evaluate the model and *return* the loss without calling `backward` (the
optimizer differentiates it itself, twice). Use float64 when you want high accuracy.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch

from training.methods.arncg.capped_cg import capped_cg

POLICIES = ("gradient", "minimum_gradient")


def regularizer(norm_g: float, prev_g: float, min_g: float, prev_min: float, policy: str,
                theta: float) -> tuple[float, float]:
    """(omega_f, omega): the method's adaptive regularizer, from gradient norms alone (step 2 above).

    omega_f = |g_k|^(1/2) ("gradient") or eps_k^(1/2) ("minimum_gradient"); the trial step's omega shrinks
    it by the gradient's progress to the power theta, which is what makes the local rate quadratic."""
    omega_f = math.sqrt(norm_g if policy == "gradient" else min_g)
    shrink = min(1.0, norm_g / prev_g) if policy == "gradient" else min_g / prev_min
    return omega_f, omega_f * shrink**theta


@dataclass
class StepRecord:
    """What one outer iteration did (kept in `ARNCG.history`)."""

    loss: float
    grad_norm: float
    kind: str  # "SOL", "NC", "ERR" (treated as SOL) or "converged"
    alpha: float
    M: float
    omega: float
    cg_iterations: int
    accepted: bool


class ARNCG(torch.optim.Optimizer):
    """Adaptive regularized Newton-CG. Parameter-free: the defaults are the paper's.

    theta: trial-step exponent (paper: 0.5 or 1; >= 1 for quadratic local convergence);
    policy: "gradient" (ARNCG_g, omega_f = |g_k|^(1/2)) or "minimum_gradient" (ARNCG_eps);
    mu, beta, min_alpha: line search (sufficient decrease, shrink factor, smallest step tried);
    gamma, tau_minus, tau_plus, M0: the adaptive Lipschitz estimate; cg_*: capped CG tolerances;
    tolerance: no step is taken once |g| <= tolerance.
    """

    def __init__(self, params: Iterable[torch.Tensor], theta: float = 1.0, policy: str = "gradient",
                 mu: float = 0.3, beta: float = 0.5, min_alpha: float = 0.3, gamma: float = 5.0,
                 tau_minus: float = 0.3, tau_plus: float = 1.0, M0: float = 1.0, cg_reltol: float = 0.01,
                 cg_abstol: float = 0.01, cg_max_iter: int | None = None, tolerance: float = 0.0) -> None:
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
        if theta < 0 or not 0 < mu < 0.5 or not 0 < beta < 1 or gamma <= 1 or M0 <= 0:
            raise ValueError("need theta >= 0, 0 < mu < 1/2, 0 < beta < 1, gamma > 1, M0 > 0")
        defaults = dict(theta=theta, policy=policy, mu=mu, beta=beta, min_alpha=min_alpha, gamma=gamma,
                        tau_minus=tau_minus, tau_plus=tau_plus, cg_reltol=cg_reltol, cg_abstol=cg_abstol,
                        cg_max_iter=cg_max_iter, tolerance=tolerance)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("ARNCG treats all parameters as one vector: pass a single parameter group")
        self.M = M0
        self.history: list[StepRecord] = []
        # Oracle calls, the budget baselines are matched on: gradients (with the graph for HVPs), Hessian-vector
        # products, and loss-only evaluations of the line searches.
        self.oracle_calls = {"gradient": 0, "hvp": 0, "function": 0}
        self._prev: tuple[float, float] | None = None  # (|g|, min |g|) at the previous iteration
        self._pending: tuple[float, float, float] | None = None  # (f_old, omega, pl) of an alpha=1 step

    # -- vector views of the parameters -------------------------------------------------------------

    def _params(self) -> list[torch.Tensor]:
        return [p for p in self.param_groups[0]["params"] if p.requires_grad]

    def _set(self, params: list[torch.Tensor], flat: torch.Tensor) -> None:
        torch.nn.utils.vector_to_parameters(flat, params)

    # -- one outer iteration --------------------------------------------------------------------------

    def step(self, closure: Callable[[], torch.Tensor]) -> torch.Tensor:  # type: ignore[override]
        """One ARNCG iteration; returns the loss at the point where the iteration started."""
        if closure is None:
            raise ValueError("ARNCG needs a closure that re-evaluates the loss")
        o = self.param_groups[0]
        params = self._params()
        with torch.enable_grad():
            loss = closure()
            grads = torch.autograd.grad(loss, params, create_graph=True)
        self.oracle_calls["gradient"] += 1
        g = torch.cat([gr.reshape(-1) for gr in grads]).detach()
        f, norm_g = float(loss.detach()), float(g.norm())
        prev_g, prev_min = self._prev or (norm_g, norm_g)
        min_g = min(norm_g, prev_min)
        self._settle_pending(f, norm_g, o)
        if norm_g <= o["tolerance"]:
            self.history.append(StepRecord(f, norm_g, "converged", 0.0, self.M, 0.0, 0, False))
            return loss.detach()

        omega_f, omega = regularizer(norm_g, prev_g, min_g, prev_min, o["policy"], o["theta"])
        rho = math.sqrt(self.M) * omega
        self._prev = (norm_g, min_g)
        if rho <= 0:  # exact stationary point with tolerance 0
            self.history.append(StepRecord(f, norm_g, "converged", 0.0, self.M, 0.0, 0, False))
            return loss.detach()

        def hvp(v: torch.Tensor) -> torch.Tensor:
            self.oracle_calls["hvp"] += 1
            chunks, start = [], 0
            for p in params:
                chunks.append(v[start:start + p.numel()].view_as(p))
                start += p.numel()
            hv = torch.autograd.grad(grads, params, grad_outputs=chunks, retain_graph=True)
            return torch.cat([h.reshape(-1) for h in hv]).detach()

        dim = g.numel()
        cg = capped_cg(g, rho, hvp, reltol=min(o["cg_reltol"], rho), abstol=o["cg_abstol"],
                       max_iter=o["cg_max_iter"] or dim + 1)
        x0 = torch.nn.utils.parameters_to_vector(params).detach().clone()
        kind = "SOL" if cg.kind in ("SOL", "ERR") else "NC"
        if kind == "SOL":
            d = cg.direction
            alpha, f_new, ok = self._search_sol(closure, params, x0, d, f, float(g @ d), omega, o)
        else:
            u = cg.direction / cg.direction.norm()
            curvature = abs(float(u @ hvp(u))) / self.M
            d = -curvature * math.copysign(1.0, float(g @ u)) * u
            alpha, f_new, ok = self._search(closure, params, x0, d,
                                            lambda a, fn: fn <= f - self.M * o["mu"] * a**2 * float(d.norm()) ** 3,
                                            o)
        self._update_M(kind, alpha, f, f_new, omega, omega_f, ok, o)
        if not ok:
            self._set(params, x0)
        self.history.append(StepRecord(f, norm_g, cg.kind, alpha, self.M, omega, cg.iterations, ok))
        return loss.detach()

    # -- line searches ----------------------------------------------------------------------------------

    def _search(self, closure: Callable[[], torch.Tensor], params: list[torch.Tensor], x0: torch.Tensor,
                d: torch.Tensor, accept: Callable[[float, float], bool], o: dict,
                scale: float = 1.0) -> tuple[float, float, bool]:
        """Backtrack alpha = 1, beta, beta^2, ... while alpha > min_alpha; step is scale * alpha * d.

        The closure runs with autograd on (a physics-informed loss differentiates the network inside),
        but only its value is read."""
        alpha, f_new = 1.0, math.inf
        while alpha > o["min_alpha"]:
            self._set(params, x0 + scale * alpha * d)
            f_new = float(closure().detach())
            self.oracle_calls["function"] += 1
            if accept(scale * alpha, f_new):
                return scale * alpha, f_new, True
            alpha *= o["beta"]
        return scale * alpha, f_new, False

    def _search_sol(self, closure: Callable[[], torch.Tensor], params: list[torch.Tensor], x0: torch.Tensor,
                    d: torch.Tensor, f: float, slope: float, omega: float, o: dict) -> tuple[float, float, bool]:
        """Armijo on d; if that fails and d is long, Armijo again on the shorter hat_alpha * d."""
        def armijo(a: float, fn: float) -> bool:
            return fn <= f + o["mu"] * a * slope

        alpha, f_new, ok = self._search(closure, params, x0, d, armijo, o)
        hat_alpha = math.sqrt(omega / math.sqrt(self.M) / max(float(d.norm()), 1e-300))
        if not ok and hat_alpha < 1:
            alpha, f_new, ok = self._search(closure, params, x0, d, armijo, o, scale=hat_alpha)
        return alpha, f_new, ok

    # -- the adaptive Lipschitz estimate -----------------------------------------------------------------

    def _update_M(self, kind: str, alpha: float, f: float, f_new: float, omega: float, omega_f: float,
                  ok: bool, o: dict) -> None:
        self._pending = None
        if not ok:
            self.M *= o["gamma"]
            return
        pl = o["tau_plus"] / math.sqrt(self.M)
        drop = f - f_new
        dec_coeff = o["mu"] * o["tau_minus"]
        grow = False
        if kind == "SOL" and alpha < 1:
            grow = drop < o["beta"] * o["mu"] * pl * omega**3
        elif kind == "SOL":
            dec_coeff *= 4 / 33
            self._pending = (f, omega, pl)  # needs |g| at the new point: settled at the next step
        else:
            grow = drop < ((1 - 2 * o["mu"]) * o["beta"]) ** 2 * o["mu"] * pl * omega**3
        if drop > dec_coeff * pl * omega_f**3:
            self.M /= o["gamma"]
            self._pending = None
        elif grow:
            self.M *= o["gamma"]

    def _settle_pending(self, f_new: float, norm_g_new: float, o: dict) -> None:
        """The deferred test of a full (alpha = 1) SOL step, now that the new gradient is known."""
        if self._pending is None:
            return
        f_old, omega, pl = self._pending
        self._pending = None
        if f_old - f_new < 4 / 33 * o["mu"] * pl * min(omega**3, norm_g_new**2 / omega):
            self.M *= o["gamma"]
