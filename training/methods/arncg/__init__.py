"""ARNCG: adaptive regularized Newton-CG (Zhou et al., NeurIPS 2025) as a torch optimizer.

    from training.methods.arncg import ARNCG
    opt = ARNCG(model.parameters())          # no learning rate to choose
    for _ in range(50):
        opt.step(lambda: loss_fn(model))      # the closure returns the loss; no backward()

See `docs/training/arncg.md` for when it pays off (small, smooth, deterministic losses).
"""

from training.methods.arncg.optimizer import ARNCG, StepRecord
from training.methods.arncg.polish import polish

__all__ = ["ARNCG", "StepRecord", "polish"]
