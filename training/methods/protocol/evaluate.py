"""Validation loss, exactness of the compressed wire, and the post-hoc projection baselines.

The post-hoc baselines take a model trained *without* the subspace constraint and squeeze its boundary
activations into k numbers a token only at evaluation time: onto the seeded U (what the SSN wire would
carry), or, stronger, onto the top-k principal directions of its own boundary activations after removing a
per-token mean (so the receiver, given the token ids, gets the best rank-k linear reconstruction the
training data allows, with the same bytes on the wire as the SSN).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from training.methods.protocol.model import Boundary, StagedModel
from training.methods.protocol.subspace import seeded_basis

Batches = Sequence[tuple[torch.Tensor, torch.Tensor]]


@torch.no_grad()
def validation_loss(model: StagedModel, batches: Batches, boundary: Boundary | None = None) -> float:
    model.eval()
    losses = [float(model.loss(x, y, boundary)) for x, y in batches]
    model.train()
    return float(np.mean(losses))


def relative_error(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> float:
    """||a - b|| / ||b|| over all parameters together; the two must hold the same names."""
    if set(a) != set(b):
        raise ValueError(f"gradient sets differ: {sorted(set(a) ^ set(b))}")
    diff = sum(float(np.sum((a[n] - b[n]) ** 2)) for n in b)
    norm = sum(float(np.sum(b[n] ** 2)) for n in b)
    return float(np.sqrt(diff / norm))


def local_gradients(model: StagedModel, tokens: torch.Tensor, targets: torch.Tensor) -> dict[str, np.ndarray]:
    """Gradients of the in-process model with no wire at all: the reference for the Ray pipeline's."""
    model.zero_grad(set_to_none=True)
    model.loss(tokens, targets).backward()
    return {n: p.grad.numpy().copy() for n, p in model.named_parameters() if p.grad is not None}


def seeded_projection(d: int, k: int, seed: int) -> Boundary:
    """x -> x U U^T with the SSN's own seeded basis (k numbers a token on the wire)."""
    u = seeded_basis(d, k, seed)
    return lambda i, x, tokens: x @ u @ u.T


@torch.no_grad()
def pca_projection(model: StagedModel, batches: Batches, k: int) -> Boundary:
    """Per boundary: per-token mean plus the top-k principal directions of what is left, fitted on `batches`."""
    vocab, n_bound = model.config.vocab, model.config.stages - 1
    acts: list[list[torch.Tensor]] = [[] for _ in range(n_bound)]
    toks: list[torch.Tensor] = []

    def record(i: int, x: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        acts[i].append(x.reshape(-1, x.shape[-1]))
        return x

    for x, _ in batches:
        model(x, record)
        toks.append(x.reshape(-1))
    tokens = torch.cat(toks)
    fitted = []
    for i in range(n_bound):
        a = torch.cat(acts[i])
        means = a.mean(0).repeat(vocab, 1)
        counts = torch.bincount(tokens, minlength=vocab)
        sums = torch.zeros_like(means).index_add_(0, tokens, a)
        seen = counts > 0
        means[seen] = sums[seen] / counts[seen, None]
        resid = a - means[tokens]
        _, _, vh = torch.linalg.svd(resid - resid.mean(0), full_matrices=False)
        fitted.append((means, vh[:k].T.contiguous()))

    def project(i: int, x: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        means, v = fitted[i]
        mu = means[tokens]
        return mu + (x - mu) @ v @ v.T

    return project
