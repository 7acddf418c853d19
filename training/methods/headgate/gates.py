"""Per-head gates on our attention modules, attached from outside and removed without a trace.

Causal head gating multiplies each head's output z_h = A_h V_h by a gate G_h before the output
projection W_O. Since W_O (z * G) = (W_O diag(G)) z, scaling the input columns of W_O that belong to
head h by G_h is exactly that gate. `HeadGates` does it with a `torch.nn.utils.parametrize`
parametrization on every `nn.MultiheadAttention.out_proj.weight` it is given: PreFM's and the
grounder's attention modules read `out_proj.weight` (both on their regular and their fused inference
paths), so they see the gated weight while the gates are attached, and the original parameter,
untouched and with the same identity, after. The models' code and default behaviour do not change.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import torch
from torch import nn
from torch.nn.utils import parametrize

GateSource = torch.Tensor | Callable[[], torch.Tensor]


def attention_modules(model: nn.Module) -> list[tuple[str, nn.MultiheadAttention]]:
    """Every `nn.MultiheadAttention` in `model`, by qualified name, in registration order."""
    return [(name, m) for name, m in model.named_modules() if isinstance(m, nn.MultiheadAttention)]


class _GatedColumns(nn.Module):
    """Parametrization W -> W * repeat(G[row], head_dim) along W's input columns."""

    def __init__(self, owner: HeadGates, row: int, head_dim: int) -> None:
        super().__init__()
        self.owner, self.row, self.head_dim = owner, row, head_dim

    def forward(self, weight: torch.Tensor) -> torch.Tensor:
        gate = self.owner.current()[self.row].to(weight)
        return weight * gate.repeat_interleave(self.head_dim)[None, :]


class HeadGates(AbstractContextManager):
    """Gates of shape (modules, heads) on a model's attention modules while the context is open.

    `gates` is a tensor, or a callable returning one (e.g. `lambda: logits.sigmoid()`), read at every
    forward so that an optimizer can train it. `names` picks modules (default: all of them).
    """

    def __init__(self, model: nn.Module, gates: GateSource, names: list[str] | None = None) -> None:
        found = dict(attention_modules(model))
        names = list(found) if names is None else list(names)
        missing = [n for n in names if n not in found]
        if missing:
            raise ValueError(f"no nn.MultiheadAttention named {missing}")
        if not names:
            raise ValueError("the model has no nn.MultiheadAttention modules to gate")
        heads = {found[n].num_heads for n in names}
        if len(heads) != 1:
            raise ValueError(f"gated modules must share a head count, got {sorted(heads)}")
        self.model, self.names = model, names
        self.modules = [found[n] for n in names]
        self.num_heads = heads.pop()
        self.source = gates
        self._attached = False
        self._order: list[list[str]] = []
        self.current()  # validate the shape once, before anything is attached

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self.names), self.num_heads)

    def current(self) -> torch.Tensor:
        gates = self.source() if callable(self.source) else self.source
        if tuple(gates.shape) != self.shape:
            raise ValueError(f"gates must have shape {self.shape}, got {tuple(gates.shape)}")
        return gates

    def __enter__(self) -> HeadGates:
        if self._attached:
            raise RuntimeError("these gates are already attached")
        self._order = [list(mha.out_proj._parameters) for mha in self.modules]
        for row, mha in enumerate(self.modules):
            if parametrize.is_parametrized(mha.out_proj, "weight"):
                raise RuntimeError(f"{self.names[row]}.out_proj.weight is already parametrized")
            head_dim = mha.embed_dim // mha.num_heads
            parametrize.register_parametrization(mha.out_proj, "weight", _GatedColumns(self, row, head_dim),
                                                 unsafe=True)
        self._attached = True
        return self

    def __exit__(self, *exc: Any) -> None:
        for mha, order in zip(self.modules, self._order, strict=False):
            if parametrize.is_parametrized(mha.out_proj, "weight"):
                parametrize.remove_parametrizations(mha.out_proj, "weight", leave_parametrized=False)
            # Put the restored weight back in its place so parameters() and state_dict() keep their order.
            params = mha.out_proj._parameters
            for key in [k for k in order if k in params]:
                params[key] = params.pop(key)
        self._attached = False


def ablation_gates(shape: tuple[int, int], heads: list[tuple[int, int]]) -> torch.Tensor:
    """Ones everywhere except zeros at the given (module row, head) pairs."""
    gates = torch.ones(shape)
    for row, head in heads:
        gates[row, head] = 0.0
    return gates
