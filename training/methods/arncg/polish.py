"""Second-order polishing of a few parameters of a trained model, the use ARNCG suits in Foresight.

Our trainers (PreFM, the grounder) fit with AdamW on mini-batches; ARNCG needs a deterministic loss
(one fixed batch, or a full small set) and Hessian-vector products, so it is not a drop-in for those
loops. What it does well is the last mile: with the network frozen, refit a small head (a classifier,
a calibration layer, a probe) on a fixed set to a tight gradient tolerance without choosing a learning
rate. `polish` is that loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch

from training.methods.arncg.optimizer import ARNCG, StepRecord


def polish(params: Iterable[torch.Tensor], loss_fn: Callable[[], torch.Tensor], max_steps: int = 50,
           tolerance: float = 1e-8, **options: float) -> list[StepRecord]:
    """Run ARNCG on `params` (others untouched) until |g| <= tolerance or `max_steps`; returns the history.

    `loss_fn()` recomputes the loss on a fixed batch (no backward); `options` go to `ARNCG`.
    """
    params = list(params)
    if not params:
        raise ValueError("polish needs at least one parameter")
    opt = ARNCG(params, tolerance=tolerance, **options)
    for _ in range(max_steps):
        opt.step(loss_fn)
        if opt.history[-1].kind == "converged":
            break
    return opt.history
